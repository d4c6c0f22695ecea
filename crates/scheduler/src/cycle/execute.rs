//! The executor of an [`Attempt`]: it sends the effects through the cycle's collaborators and
//! hands each answer back, deciding nothing. It is the one place that checks the write permit
//! (right before each patch), that announces result patches to the caches' after-write hook
//! (the own-write bookkeeping follows from each [`Patch`]), and that holds the assumption
//! cache's lock and reservation.

use scheduler_core::AssumptionSource;
use scheduler_core::schedule::BindingInput;
use scheduler_core::snapshot::Snapshot;

use super::{Cycle, CycleError, CycleReport};
use crate::cycle::assume::healthy_clusters;
use crate::cycle::attempt::{Answer, Attempt, Effect, Patch};
use crate::cycle::patch::with_precondition;
use crate::cycle::sink::Target;
use crate::model::binding::{Binding, BindingKey};
use crate::model::condition::{ApiFailure, AttemptError};

impl Cycle<'_> {
    /// The algorithm's input for `binding` as it is now.
    fn input<'a>(&'a self, snapshot: &'a Snapshot, binding: &'a Binding) -> BindingInput<'a> {
        BindingInput {
            snapshot,
            spec: &binding.spec,
            status: &binding.status,
            workload_index: self.workload_index,
            assumed: self.assumptions.map(|a| a as &dyn AssumptionSource),
        }
    }

    /// Send `effects`, then those `attempt` returns for each answer, until it is done.
    pub(super) async fn execute(
        &self,
        mut attempt: Attempt<'_>,
        mut effects: Vec<Effect>,
        snapshot: &Snapshot,
    ) -> CycleReport {
        let key = attempt.binding().key();
        let mut lock = None;
        let mut reservation = None;
        loop {
            let mut answer = None;
            for effect in effects {
                let binding = attempt.binding();
                match effect {
                    Effect::Event(e) => self.events.event(binding, e.warning, e.reason, e.message),
                    Effect::Schedule { trigger, exclusive } => {
                        tracing::info!(binding = %key, ?trigger, "Start to schedule {}", key.describe());
                        if let Some(a) = self.assumptions.filter(|_| exclusive) {
                            lock = Some(a.reserve().await);
                        }
                        let input = self.input(snapshot, binding);
                        let outcome = self.scheduler.schedule_binding(input, self.want_trace);
                        answer = Some(Answer::Outcome(outcome.await));
                    }
                    Effect::Echo(stored) => {
                        let input = self.input(snapshot, &stored);
                        let outcome = self.scheduler.schedule_binding(input, false).await;
                        answer = Some(Answer::Outcome(outcome));
                    }
                    Effect::Reserve(result) => {
                        let akey = binding.key().to_string();
                        let healthy = healthy_clusters(&binding.status);
                        reservation = self
                            .assumptions
                            .and_then(|a| a.assume(&akey, &binding.spec, &result, healthy));
                    }
                    Effect::Unlock => drop(lock.take()),
                    Effect::Keep => reservation.take().into_iter().for_each(|r| r.keep()),
                    Effect::Release => drop(reservation.take()),
                    Effect::Patch(patch) => {
                        answer = Some(Answer::Object(self.send(&key, patch).await));
                    }
                    Effect::Reread => {
                        let read = self.writer.get(&key).await;
                        answer = Some(Answer::Object(read.map(Box::new)));
                    }
                    Effect::Done(result) => {
                        return CycleReport {
                            schedule_type: attempt.schedule_type(),
                            result,
                            outcome: attempt.take_outcome().filter(|_| self.want_trace),
                        };
                    }
                }
            }
            let Some(answer) = answer else {
                let stalled = AttemptError::Other("the attempt stopped without a request".into());
                return CycleReport {
                    schedule_type: attempt.schedule_type(),
                    result: Err(CycleError::Failed(stalled)),
                    outcome: None,
                };
            };
            effects = attempt.on(answer);
        }
    }

    /// Send `patch` under the write permit. A result patch is announced to the after-write
    /// hook before it is sent (its watch event can arrive before the answer) and after.
    async fn send(&self, key: &BindingKey, patch: Patch) -> Result<Box<Binding>, ApiFailure> {
        let hook = self.after_write.filter(|_| patch.target == Target::Main);
        let bumps = patch.bumps_generation();
        if let Some(h) = hook {
            h.sending(key, patch.generation, bumps);
        }
        let body = with_precondition(patch.body, patch.precondition.as_deref());
        let sent = match self.permit.map(|p| p.check()) {
            Some(Err(fenced)) => Err(fenced.into()),
            _ => self
                .writer
                .patch(key, patch.target, body)
                .await
                .map(Box::new),
        };
        if let Some(h) = hook {
            h.answered(key, bumps, sent.as_deref());
        }
        sent
    }
}
