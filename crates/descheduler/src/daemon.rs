//! The descheduler process: component-base's lifecycle (servers, client, leader election on
//! the Lease `karmada-descheduler`, signals) around [`crate::controller::run`].

use std::sync::Arc;

use component_base::cancel::CancellationToken;
use component_base::lifecycle::{Daemon, Settings};
use component_base::metrics::ComponentMetrics;

use crate::options::Options;

fn daemon(opts: Options) -> Daemon {
    let metrics = metrics();
    let settings = Settings::new(crate::options::version_text(), "descheduling", &opts.common);
    let work_metrics = metrics.clone();
    Daemon::new(
        settings,
        metrics,
        opts,
        move |opts, client, ready, fence, stop| {
            crate::controller::run(opts, client, work_metrics.clone(), ready, fence, stop)
        },
    )
}

/// The process's metrics: the shared families, and ours (docs/compatibility.md): requests
/// refused for lack of an RBAC rule.
fn metrics() -> Arc<ComponentMetrics> {
    let metrics = Arc::new(ComponentMetrics::new());
    metrics.register(|r| component_base::forbidden::register(r, "karmada_descheduler"));
    metrics
}

/// Run until a signal or a fatal error.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    tracing::info!(
        "Please make sure the karmada-scheduler-estimator of all member clusters has been deployed"
    );
    daemon(opts).run().await
}

/// [`run`] with an explicit stop token (tests).
pub async fn run_until(opts: Options, stop: CancellationToken) -> anyhow::Result<()> {
    daemon(opts).run_until(stop).await
}
