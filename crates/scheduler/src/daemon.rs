//! The scheduler process: component-base's lifecycle (servers, client, leader election,
//! signals) around [`crate::controller::run`], and the `/debug/explain` endpoint when asked.

use std::sync::Arc;

use component_base::cancel::CancellationToken;
use component_base::lifecycle::{self, Settings, Work};

use crate::config::options::Options;
use crate::controller::ExplainSlot;
use crate::explain::endpoint::explain_routes;
use crate::metrics::Metrics;

fn settings(opts: &Options, slot: Option<&Arc<ExplainSlot>>) -> Settings {
    Settings {
        version_text: crate::config::options::version_text(),
        work_name: "scheduling",
        serving: opts.serving.clone(),
        kube: opts.kube.clone(),
        leader_election: opts.leader_election.clone(),
        health_routes: slot.map(|s| explain_routes(s.clone())),
    }
}

fn work(opts: Options, metrics: Arc<Metrics>, slot: Option<Arc<ExplainSlot>>) -> Work {
    let opts = Arc::new(opts);
    Box::new(move |client, ready, fence, stop| {
        let (opts, metrics, slot) = (opts.clone(), metrics.clone(), slot.clone());
        Box::pin(async move {
            crate::controller::run(&opts, client, metrics, ready, fence, stop, slot).await
        })
    })
}

fn parts(opts: &Options) -> (Settings, Option<Arc<ExplainSlot>>) {
    let slot = opts
        .enable_explain_endpoint
        .then(|| Arc::new(ExplainSlot::new()));
    (settings(opts, slot.as_ref()), slot)
}

/// Run until a signal or a fatal error.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let (settings, slot) = parts(&opts);
    lifecycle::run(settings, metrics.base(), work(opts, metrics, slot)).await
}

/// [`run`] with an explicit stop token (tests).
pub async fn run_until(opts: Options, stop: CancellationToken) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let (settings, slot) = parts(&opts);
    lifecycle::run_until(settings, metrics.base(), work(opts, metrics, slot), stop).await
}
