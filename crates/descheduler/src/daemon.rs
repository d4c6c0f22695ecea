//! The descheduler process: component-base's lifecycle (servers, client, leader election on
//! the Lease `karmada-descheduler`, signals) around [`crate::controller::run`].

use std::sync::Arc;

use component_base::cancel::CancellationToken;
use component_base::lifecycle::{self, Settings, Work};
use component_base::metrics::ComponentMetrics;

use crate::options::Options;

fn settings(opts: &Options) -> Settings {
    Settings {
        version_text: crate::options::version_text(),
        work_name: "descheduling",
        serving: opts.serving.clone(),
        kube: opts.kube.clone(),
        leader_election: opts.leader_election.clone(),
        health_routes: None,
    }
}

fn work(opts: Options, metrics: Arc<ComponentMetrics>) -> Work {
    let opts = Arc::new(opts);
    Box::new(move |client, ready, fence, stop| {
        let (opts, metrics) = (opts.clone(), metrics.clone());
        Box::pin(
            async move { crate::controller::run(opts, client, metrics, ready, fence, stop).await },
        )
    })
}

/// Run until a signal or a fatal error.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    tracing::info!(
        "Please make sure the karmada-scheduler-estimator of all member clusters has been deployed"
    );
    let metrics = Arc::new(ComponentMetrics::new());
    lifecycle::run(settings(&opts), metrics.clone(), work(opts, metrics)).await
}

/// [`run`] with an explicit stop token (tests).
pub async fn run_until(opts: Options, stop: CancellationToken) -> anyhow::Result<()> {
    let metrics = Arc::new(ComponentMetrics::new());
    lifecycle::run_until(settings(&opts), metrics.clone(), work(opts, metrics), stop).await
}
