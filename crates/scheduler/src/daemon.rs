//! The scheduler process: component-base's lifecycle (servers, client, leader election,
//! signals) around [`crate::controller::run`], and the `/debug/explain` endpoint when asked.

use std::sync::Arc;

use component_base::cancel::CancellationToken;
use component_base::lifecycle::{Daemon, Settings};

use crate::config::options::Options;
use crate::controller::ExplainSlot;
use crate::explain::endpoint::explain_routes;
use crate::metrics::Metrics;

fn daemon(opts: Options) -> Daemon {
    let metrics = Arc::new(Metrics::new());
    let slot = opts
        .enable_explain_endpoint
        .then(|| Arc::new(ExplainSlot::new()));
    let mut settings = Settings::new(
        crate::config::options::version_text(),
        "scheduling",
        &opts.common,
    );
    settings.health_routes = slot.as_ref().map(|s| explain_routes(s.clone()));
    let base = metrics.base();
    Daemon::new(
        settings,
        base,
        opts,
        move |opts, client, ready, fence, stop| {
            let (metrics, slot) = (metrics.clone(), slot.clone());
            async move { crate::controller::run(&opts, client, metrics, ready, fence, stop, slot).await }
        },
    )
}

/// Run until a signal or a fatal error.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    daemon(opts).run().await
}

/// [`run`] with an explicit stop token (tests).
pub async fn run_until(opts: Options, stop: CancellationToken) -> anyhow::Result<()> {
    daemon(opts).run_until(stop).await
}
