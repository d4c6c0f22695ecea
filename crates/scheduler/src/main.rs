//! `karmada-scheduler`: the daemon and its `simulate` subcommand.
//!
//! Planned surface (filled by the daemon and scheduler-core issues):
//! - `options`: every flag of the reference v1.18.2, parsed as pflag parses them;
//! - `controller`: watches, scheduling queue, cycle driver, patch writer;
//! - `leader`: Lease-based leader election interoperable with the Go scheduler;
//! - `simulate`: one scheduling pass over objects read from files.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("karmada-scheduler: not implemented yet")
}
