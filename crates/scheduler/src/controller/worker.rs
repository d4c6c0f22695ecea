//! The scheduling workers: one key at a time per worker, only while leading. A key's attempt
//! ([`Context::process`]) runs the cycle on the cached binding, re-reads it when its write
//! conflicted, and maps the result to the queue's [`Outcome`]; a binding that does not decode
//! is told so instead.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch as tokio_watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Context;
use crate::cycle::patch::{REASON_FAILED, StatusUpdate, status_patch};
use crate::cycle::sink::Target;
use crate::cycle::{Cycle, CycleError};
use crate::metrics::IncomingEvent;
use crate::model::binding::BindingKey;
use crate::model::condition::ScheduledCondition;
use crate::queue::Outcome;
use crate::store::{Cached, Malformed};

/// Re-reads of a binding whose write conflicted before the attempt is handed back to the queue.
const CONFLICT_RETRIES: usize = 3;

impl Context {
    /// Process one key; the queue outcome.
    pub async fn process(&self, key: &BindingKey) -> Outcome {
        let Some(cached) = self.stores.binding(key) else {
            return Outcome::Success;
        };
        let mut binding = match cached {
            Cached::Ok(b) => (*b).clone(),
            Cached::Malformed(m) => return self.report_malformed(&m).await,
        };
        let snapshot = self.stores.snapshot();
        let cycle = Cycle {
            scheduler: &self.scheduler,
            writer: self.writer.as_ref(),
            events: self.events.as_ref(),
            workload_index: self
                .workload
                .as_deref()
                .map(|w| w as &dyn scheduler_core::framework::WorkloadGroupIndex),
            own_writes: Some(&self.own_writes),
            assumptions: self.assumptions.as_deref(),
            want_trace: false,
        };
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
                    Err(e) if e.is_not_found() => return Outcome::Success,
                    Err(e) => {
                        tracing::error!(binding = %key, "re-reading after a conflict: {e}");
                        if e.is_transient() {
                            return Outcome::Unavailable;
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
            return Outcome::Failure;
        };
        if let Some(t) = report.schedule_type {
            self.metrics
                .binding_schedule(t.as_str(), start.elapsed(), report.result.is_ok());
        }
        match report.result {
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
                    CycleError::Conflict => Outcome::Failure,
                }
            }
        }
    }

    /// A binding that does not decode: tell it, once per generation.
    async fn report_malformed(&self, m: &Malformed) -> Outcome {
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
            return Outcome::Success;
        };
        self.events.event(&m.binding, true, REASON_FAILED, message);
        match self.writer.patch(&key, Target::Status, patch).await {
            Ok(_) => Outcome::Success,
            Err(e) => {
                tracing::error!(binding = %key, "writing the decode error: {e}");
                if e.is_transient() {
                    Outcome::Unavailable
                } else {
                    Outcome::Failure
                }
            }
        }
    }
}

/// Start `count` workers on the queue of `ctx`.
pub(super) fn spawn(
    ctx: &Arc<Context>,
    count: usize,
    leading: &tokio_watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    (0..count)
        .map(|_| tokio::spawn(work(ctx.clone(), leading.clone())))
        .collect()
}

/// One worker: pop a key, process it, tell the queue, until the queue shuts down.
async fn work(ctx: Arc<Context>, mut leading: tokio_watch::Receiver<bool>) {
    loop {
        // Only while leading (the Lease may be lost and won again).
        if leading.wait_for(|l| *l).await.is_err() {
            break;
        }
        let Some(item) = ctx.queue.pop().await else {
            break;
        };
        if !*leading.borrow() {
            // Lost while waiting for a key: not this attempt's to make.
            ctx.queue.hand_back(item);
            continue;
        }
        let outcome = ctx.process(&item.key).await;
        ctx.queue.done(item, outcome);
    }
}
