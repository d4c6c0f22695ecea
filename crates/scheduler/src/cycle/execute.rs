//! The executor of an [`Attempt`]: it sends the effects through the cycle's collaborators and
//! hands each answer back, deciding nothing. It is the one place that sends (through the
//! cycle's API, which in the daemon checks the write permit right before each patch), that
//! announces result patches to the caches' after-write hook
//! (the own-write bookkeeping follows from each [`Patch`]), and that holds the assumption
//! cache's lock and reservation.

use scheduler_core::AssumptionSource;
use scheduler_core::schedule::BindingInput;
use scheduler_core::snapshot::Snapshot;

use super::{Cycle, CycleError, CycleReport};
use crate::cycle::attempt::{Answer, Attempt, Effect, Patch};
use crate::cycle::patch::with_precondition;
use crate::cycle::sink::Target;
use crate::model::binding::{Binding, BindingKey};
use crate::model::condition::{ApiFailure, AttemptError};
use crate::store::assume::healthy_clusters;

impl Cycle<'_> {
    /// The algorithm's input for `binding` as it is now.
    fn input<'a>(&'a self, snapshot: &'a Snapshot, binding: &'a Binding) -> BindingInput<'a> {
        BindingInput {
            snapshot,
            spec: &binding.spec,
            status: &binding.status,
            workload_index: self.parts.workload_index,
            assumed: self.parts.assumptions.map(|a| a as &dyn AssumptionSource),
        }
    }

    /// Send the effects `start` returns, then those `attempt` returns for each answer, until
    /// it is done.
    pub(super) async fn execute(
        &self,
        mut attempt: Attempt<'_>,
        start: impl FnOnce(&mut Attempt<'_>) -> Vec<Effect>,
        snapshot: &Snapshot,
    ) -> CycleReport {
        let (key, mut effects) = (attempt.binding().key(), start(&mut attempt));
        let (assumptions, mut lock, mut reservation) = (self.parts.assumptions, None, None);
        let result = 'attempt: loop {
            let mut answer = None;
            for effect in effects {
                let binding = attempt.binding();
                match effect {
                    Effect::Event(e) => self.events.event(binding, e.warning, e.reason, e.message),
                    Effect::Schedule { trigger, exclusive } => {
                        tracing::info!(binding = %key, ?trigger, "Start to schedule {}", key.describe());
                        if let Some(a) = assumptions.filter(|_| exclusive) {
                            lock = Some(a.reserve().await);
                        }
                        let input = self.input(snapshot, binding);
                        let outcome = self
                            .scheduler
                            .schedule_binding(input, self.parts.want_trace);
                        answer = Some(Answer::Outcome(outcome.await));
                    }
                    Effect::Echo(stored) => {
                        let outcome = self
                            .scheduler
                            .schedule_binding(self.input(snapshot, &stored), false);
                        answer = Some(Answer::Outcome(outcome.await));
                    }
                    Effect::Reserve(result) => {
                        let (akey, healthy) = (key.to_string(), healthy_clusters(&binding.status));
                        reservation = assumptions
                            .and_then(|a| a.assume(&akey, &binding.spec, &result, healthy));
                    }
                    Effect::Unlock => drop(lock.take()),
                    Effect::Keep => reservation.take().into_iter().for_each(|r| r.keep()),
                    Effect::Release => drop(reservation.take()),
                    Effect::Patch(patch) => {
                        answer = Some(Answer::Object(self.send(&key, patch).await))
                    }
                    Effect::Reread => {
                        answer = Some(Answer::Object(self.api.get(&key).await.map(Box::new)))
                    }
                    Effect::Done(result) => break 'attempt result,
                }
            }
            let Some(answer) = answer else {
                let stalled = AttemptError::Other("the attempt stopped without a request".into());
                break Err(CycleError::Failed(stalled));
            };
            effects = attempt.on(answer);
        };
        let outcome = attempt.take_outcome().filter(|_| self.parts.want_trace);
        let schedule_type = attempt.schedule_type();
        CycleReport {
            schedule_type,
            result,
            outcome,
        }
    }

    /// Send `patch`. A result patch is announced to the after-write
    /// hook before it is sent (its watch event can arrive before the answer) and after.
    async fn send(&self, key: &BindingKey, patch: Patch) -> Result<Box<Binding>, ApiFailure> {
        let hook = self
            .parts
            .after_write
            .filter(|_| patch.target == Target::Main);
        let bumps = patch.bumps_generation();
        if let Some(h) = hook {
            h.sending(key, patch.generation, bumps);
        }
        let body = with_precondition(patch.body, patch.precondition.as_deref());
        let sent = self.api.patch(key, patch.target, body).await.map(Box::new);
        if let Some(h) = hook {
            h.answered(key, bumps, sent.as_deref());
        }
        sent
    }
}
