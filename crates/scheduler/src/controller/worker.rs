//! The scheduling workers: one key at a time per worker, only while leading. A key's attempt
//! ([`Context::process`]) runs the cycle on the cached binding (or, for a binding that does
//! not decode, tells it so) and maps its report to the queue's [`Outcome`].
//!
//! Each attempt runs under the [`Permit`] of the leadership term it was taken in: the context's
//! write gate lends the binding API under it, and the permit is checked right before each
//! write. An attempt whose write the fence refused
//! (the lease lapsed, e.g. the process was frozen) is handed back to the queue unwritten, for
//! whoever leads, without counting as a failure.

use std::sync::Arc;

use component_base::cancel::CancellationToken;
use component_base::fence::{Fence, Permit};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Context;
use crate::cycle::{Cycle, CycleError, Parts};
use crate::metrics::IncomingEvent;
use crate::model::binding::BindingKey;
use crate::queue::Outcome;
use crate::store::Cached;

/// Decisions made again on a fresh read when a write conflicted, before the attempt is
/// handed back to the queue.
const CONFLICT_RETRIES: usize = 3;

impl Context {
    /// Process one key under `permit`; the queue outcome, or `None` when a write was fenced
    /// (nothing more was sent: the key goes back to the queue for whoever leads).
    pub async fn process(&self, key: &BindingKey, permit: &Permit) -> Option<Outcome> {
        let outcome = self.attempt(key, permit).await;
        if outcome.is_none() {
            tracing::info!(binding = %key, "not written: this replica's lease lapsed during the attempt (term {}); left to the leader", permit.term());
        }
        outcome
    }

    async fn attempt(&self, key: &BindingKey, permit: &Permit) -> Option<Outcome> {
        let Some(cached) = self.stores.binding(key) else {
            return Some(Outcome::Success);
        };
        let parts = Parts {
            rereads: CONFLICT_RETRIES,
            ..self.parts()
        };
        let api = self.gate.under(permit);
        let cycle = Cycle::new(&self.scheduler, &api, self.events.as_ref(), parts);
        let (snapshot, now) = (self.stores.snapshot(), Time(Timestamp::now()));
        let start = Instant::now();
        let (report, malformed) = match &cached {
            Cached::Ok(binding) => (cycle.run(binding, &snapshot, now).await, false),
            Cached::Malformed(m) => (cycle.run_malformed(m, &snapshot, now).await, true),
        };
        match &report.result {
            Err(CycleError::Failed(e)) if e.is_fenced() => return None,
            Err(CycleError::Reread(e)) if e.is_not_found() => return Some(Outcome::Success),
            Err(CycleError::Reread(e)) => {
                tracing::error!(binding = %key, "re-reading after a conflict: {e}");
                if e.is_transient() {
                    return Some(Outcome::Unavailable);
                }
            }
            _ => {}
        }
        if let Some(t) = report.schedule_type {
            self.metrics
                .binding_schedule(t.as_str(), start.elapsed(), report.result.is_ok());
        }
        let Err(e) = report.result else {
            return Some(Outcome::Success);
        };
        // A binding that does not decode is told so, not scheduled.
        if !malformed {
            self.metrics.incoming(IncomingEvent::ScheduleAttemptFailure);
        }
        let CycleError::Failed(err) = e else {
            return Some(Outcome::Failure);
        };
        if malformed {
            tracing::error!(binding = %key, "writing the decode error: {err}");
        } else {
            tracing::error!(binding = %key, "Failed scheduling {}: {err}", key.describe());
        }
        Some(if err.is_transient() {
            // Its writes are owed: retried as soon as the server answers.
            Outcome::Unavailable
        } else if err.is_unschedulable() {
            Outcome::Unschedulable
        } else {
            Outcome::Failure
        })
    }
}

/// Start `count` workers on the queue of `ctx`.
pub(super) fn spawn(
    ctx: &Arc<Context>,
    count: usize,
    fence: &Fence,
    stop: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    (0..count)
        .map(|_| tokio::spawn(work(ctx.clone(), fence.clone(), stop.clone())))
        .collect()
}

/// One worker: pop a key, process it under a permit of the current term, tell the queue,
/// until the queue shuts down.
async fn work(ctx: Arc<Context>, fence: Fence, stop: CancellationToken) {
    loop {
        // Only while leading (the Lease may be lost and won again).
        tokio::select! {
            _ = fence.wait_permit() => {}
            _ = stop.cancelled() => break,
        }
        // The events of earlier attempts are written before this one adds its own: late when
        // the API server falls behind, never dropped.
        tokio::select! {
            _ = ctx.events.room() => {}
            _ = stop.cancelled() => break,
        }
        let Some(item) = ctx.queue.pop().await else {
            break;
        };
        // The term the attempt runs in is the one it is taken in: now, not before the wait.
        let Some(permit) = fence.permit() else {
            // Lost while waiting for a key: not this attempt's to make.
            ctx.queue.hand_back(item);
            continue;
        };
        match ctx.process(&item.key, &permit).await {
            Some(outcome) => ctx.queue.done(item, outcome),
            None => ctx.queue.hand_back(item),
        }
    }
}
