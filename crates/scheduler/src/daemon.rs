//! The running scheduler: clients, watches, workers, leader election, HTTP servers.

use crate::options::Options;

/// Run until SIGTERM/SIGINT or a fatal error.
pub async fn run(_opts: Options) -> anyhow::Result<()> {
    anyhow::bail!("scheduler exited")
}
