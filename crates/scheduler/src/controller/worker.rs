//! The scheduling workers: one key at a time per worker, only while leading. A key's attempt
//! ([`Context::process`]) runs the cycle on the cached binding, re-reads it when its write
//! conflicted, and maps the result to the queue's [`Outcome`]; a binding that does not decode
//! is told so instead.
//!
//! Each attempt runs under the [`Permit`] of the leadership term it was taken in, and every
//! write it makes checks that permit right before it is sent. An attempt whose write the fence
//! refused (the lease lapsed, e.g. the process was frozen) is handed back to the queue
//! unwritten, for whoever leads, without counting as a failure.

use std::sync::Arc;

use component_base::cancel::CancellationToken;
use component_base::fence::{Fence, Permit};
use component_base::write::Permitted;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Context;
use crate::cycle::patch::{REASON_FAILED, StatusUpdate, status_patch};
use crate::cycle::sink::{ObjectWriter as _, Target, Writer};
use crate::cycle::{Cycle, CycleError};
use crate::metrics::IncomingEvent;
use crate::model::binding::BindingKey;
use crate::model::condition::ScheduledCondition;
use crate::queue::Outcome;
use crate::store::{Cached, Malformed};

/// Re-reads of a binding whose write conflicted before the attempt is handed back to the queue.
const CONFLICT_RETRIES: usize = 3;

impl Context {
    /// Process one key under `permit`; the queue outcome, or `None` when a write was fenced
    /// (nothing more was sent: the key goes back to the queue for whoever leads).
    pub async fn process(&self, key: &BindingKey, permit: &Permit) -> Option<Outcome> {
        let writer = Permitted {
            inner: self.writer.as_ref(),
            permit,
        };
        let outcome = self.attempt(key, &writer).await;
        if outcome.is_none() {
            tracing::info!(binding = %key, "not written: this replica's lease lapsed during the attempt (term {}); left to the leader", permit.term());
        }
        outcome
    }

    async fn attempt(
        &self,
        key: &BindingKey,
        writer: &Permitted<'_, dyn Writer>,
    ) -> Option<Outcome> {
        let Some(cached) = self.stores.binding(key) else {
            return Some(Outcome::Success);
        };
        let mut binding = match cached {
            Cached::Ok(b) => (*b).clone(),
            Cached::Malformed(m) => return self.report_malformed(&m, writer).await,
        };
        let snapshot = self.stores.snapshot();
        let cycle = Cycle::new(&self.scheduler, writer, self.events.as_ref(), self.parts());
        let start = Instant::now();
        let mut report = None;
        for _ in 0..=CONFLICT_RETRIES {
            let r = cycle.run(&binding, &snapshot, Time(Timestamp::now())).await;
            if r.result == Err(CycleError::Conflict) {
                match self.writer.get(key).await {
                    Ok(fresh) => {
                        binding = fresh;
                        report = Some(r);
                        continue;
                    }
                    Err(e) if e.is_not_found() => return Some(Outcome::Success),
                    Err(e) => {
                        tracing::error!(binding = %key, "re-reading after a conflict: {e}");
                        if e.is_transient() {
                            return Some(Outcome::Unavailable);
                        }
                        report = Some(r);
                        break;
                    }
                }
            }
            report = Some(r);
            break;
        }
        let Some(report) = report else {
            return Some(Outcome::Failure);
        };
        if matches!(&report.result, Err(CycleError::Failed(e)) if e.is_fenced()) {
            return None;
        }
        if let Some(t) = report.schedule_type {
            self.metrics
                .binding_schedule(t.as_str(), start.elapsed(), report.result.is_ok());
        }
        Some(match report.result {
            Ok(()) => Outcome::Success,
            Err(e) => {
                self.metrics.incoming(IncomingEvent::ScheduleAttemptFailure);
                match e {
                    CycleError::Failed(err) => {
                        tracing::error!(binding = %key, "Failed scheduling {}: {err}", key.describe());
                        if err.is_transient() {
                            // Its writes are owed: retried as soon as the server answers.
                            Outcome::Unavailable
                        } else if err.is_unschedulable() {
                            Outcome::Unschedulable
                        } else {
                            Outcome::Failure
                        }
                    }
                    CycleError::Conflict | CycleError::Reread(_) => Outcome::Failure,
                }
            }
        })
    }

    /// A binding that does not decode: tell it, once per generation (preconditioned on the
    /// resourceVersion it was read at: a newer object is read again by its own event).
    async fn report_malformed(
        &self,
        m: &Malformed,
        writer: &Permitted<'_, dyn Writer>,
    ) -> Option<Outcome> {
        let key = m.binding.key();
        let message = format!("failed to decode {}: {}", key.describe(), m.error);
        let update = StatusUpdate {
            condition: ScheduledCondition {
                status: false,
                reason: "SchedulerError",
                message: message.clone(),
            },
            scheduled_generation: None,
            affinity_name: None,
        };
        let Some(patch) = status_patch(&m.binding.status, &update, &Time(Timestamp::now())) else {
            return Some(Outcome::Success);
        };
        let patch = crate::cycle::patch::with_precondition(patch, m.binding.resource_version());
        if writer.permit.check().is_err() {
            return None;
        }
        self.events.event(&m.binding, true, REASON_FAILED, message);
        match writer.patch(&key, Target::Status, patch).await {
            Ok(_) => Some(Outcome::Success),
            Err(e) if e.is_fenced() => None,
            // A newer object: its own watch event queues it again.
            Err(e) if e.is_conflict() => Some(Outcome::Success),
            Err(e) => {
                tracing::error!(binding = %key, "writing the decode error: {e}");
                Some(if e.is_transient() {
                    Outcome::Unavailable
                } else {
                    Outcome::Failure
                })
            }
        }
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
