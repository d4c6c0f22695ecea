//! The probe that releases bindings parked while the API server did not answer.

use std::sync::Arc;
use std::time::Duration;

use crate::model::condition::ApiFailure;
use crate::queue::SchedulingQueue;
use component_base::api::bounded;

const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// Longest wait for one probe's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// While bindings wait for the API server ([`Outcome::Unavailable`]), ask its `/readyz` (open
/// to every client by the default `system:public-info-viewer` role) every
/// [`PROBE_INTERVAL`]; once it answers, retry them all at once. The informer of the reference
/// plays this part there: its relist after an outage brings events that queue bindings again.
/// We do not count on events: the echo of a write that landed while the response was lost may
/// have been consumed, or may never come if nothing else changes.
pub(crate) async fn release_when_reachable(queue: Arc<SchedulingQueue>, client: kube::Client) {
    let mut tick = tokio::time::interval(PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if queue.waiting_len() == 0 {
            continue;
        }
        match probe(&client).await {
            Ok(()) => {
                let n = queue.release_waiting();
                tracing::info!(
                    "the API server answers again: retrying {n} binding(s) whose writes were interrupted"
                );
            }
            Err(e) => tracing::debug!("the API server is still unavailable: {e}"),
        }
    }
}

/// Whether the API server answers as a server does: a ready `/readyz`, or any judgement of the
/// request (a 403 from a cluster without the public-info role still shows it serving).
async fn probe(client: &kube::Client) -> Result<(), ApiFailure> {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .map_err(|e| ApiFailure {
            code: 0,
            reason: String::new(),
            message: e.to_string(),
        })?;
    match bounded(
        || "reading /readyz".into(),
        PROBE_TIMEOUT,
        client.request_text(request),
    )
    .await
    {
        Err(e) if e.is_transient() => Err(e),
        _ => Ok(()),
    }
}
