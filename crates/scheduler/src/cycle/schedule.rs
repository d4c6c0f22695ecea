//! The schedule procedure of a [`Cycle`], the executor of its plan (`plan.rs`): the algorithm
//! under the assumption cache's lock, the plan's first events, the reservation of what is about
//! to be written, the result patch with the echo pass the reference would run on its watch event
//! (re-planned on each stored object), then the closing event and the status patch.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::work::TargetCluster;
use scheduler_core::AssumptionSource;
use scheduler_core::schedule::{BindingInput, Decision as CoreDecision, Outcome};
use scheduler_core::snapshot::Snapshot;

use super::{Cycle, CycleError};
use crate::cycle::assume::healthy_clusters;
use crate::cycle::patch::result_patch;
use crate::cycle::plan::{PlannedEvent, Written, closing, plan};
use crate::model::annotation::encode_placement;
use crate::model::binding::{Binding, BindingKind};
use crate::model::condition::AttemptError;
use crate::model::decision::always_rescheduled;

/// Passes run for the echo of our own write of a Duplicated binding (one reorders at most;
/// the bound only guards against a result that would never settle).
const ECHO_PASSES: usize = 2;

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

    /// Schedule and write, with our write sequence.
    pub(super) async fn schedule(
        &self,
        binding: &Binding,
        snapshot: &Snapshot,
        now: Time,
    ) -> (Result<(), CycleError>, Option<Outcome>) {
        let mut kept = None;
        let result = self.schedule_inner(binding, snapshot, now, &mut kept).await;
        (result, kept)
    }

    async fn schedule_inner(
        &self,
        binding: &Binding,
        snapshot: &Snapshot,
        now: Time,
        kept: &mut Option<Outcome>,
    ) -> Result<(), CycleError> {
        let key = binding.key();
        let placement = binding.spec.placement.clone().unwrap_or_default();
        let placement_json = encode_placement(&placement);
        // A workload's estimate and its reservation happen under one lock, so that concurrent
        // cycles never spend the same free capacity (see `crate::cycle::assume`).
        let reserving = self
            .assumptions
            .filter(|_| binding.kind == BindingKind::ResourceBinding && binding.spec.is_workload());
        let reservation_lock = match reserving {
            Some(a) => Some(a.reserve().await),
            None => None,
        };
        let outcome = self
            .scheduler
            .schedule_binding(self.input(snapshot, binding), self.want_trace)
            .await;
        let plan = plan(binding, &outcome);
        if self.want_trace {
            *kept = Some(outcome);
        }
        self.tell(binding, &plan.events);

        // Reserve what is about to be written; rolled back if the write is refused.
        let mut reservation = None;
        if let (Some(a), Some(result)) = (reserving, &plan.result)
            && result_patch(binding, &placement_json, result).is_some()
        {
            let key = binding.key().to_string();
            reservation = a.assume(
                &key,
                &binding.spec,
                result,
                healthy_clusters(&binding.status),
            );
        }
        drop(reservation_lock);

        let mut written = Written::default();
        if let Some(planned) = &plan.result {
            let mut result = planned.clone();
            let mut passes = 0;
            loop {
                let base = written.stored.as_ref().unwrap_or(binding);
                let Some(patch) = result_patch(base, &placement_json, &result) else {
                    break;
                };
                let bumps_generation = patch.get("spec").is_some();
                let stored = match self.send_result(&key, base, patch, bumps_generation).await {
                    Ok(stored) => stored,
                    Err(e) if e.is_conflict() => return Err(CycleError::Conflict),
                    // No verdict on the write, which may have landed (or, fenced, was not
                    // sent): no failure status either (it could overwrite the status of a
                    // write that did land, and tells nothing). The binding is retried as soon
                    // as the server answers; if the patch landed, its marker makes the retry
                    // complete it. The reservation stays meanwhile: the write may have landed.
                    Err(e) if e.is_transient() => {
                        if let Some(r) = reservation.take() {
                            r.keep();
                        }
                        return Err(CycleError::Failed(AttemptError::Api(e)));
                    }
                    Err(e) => {
                        written.refused = Some(e);
                        break;
                    }
                };
                // The reference schedules a Duplicated or non-workload binding again when the
                // watch event of its own `spec.clusters` write comes back, and the clusters
                // it already holds then score higher (ClusterLocality), which can reorder
                // them. That echo is not queued here (see `own_writes`), so re-plan the same
                // pass now on the stored object, against the same snapshot, and write the
                // order it converges to.
                passes += 1;
                let echo =
                    bumps_generation && passes <= ECHO_PASSES && always_rescheduled(&binding.spec);
                let again = if echo {
                    self.echo_pass(snapshot, &stored).await
                } else {
                    None
                };
                written.stored = Some(stored);
                match again {
                    Some(r) => result = r,
                    None => break,
                }
            }
            if written.stored.is_some()
                && let Some(r) = reservation.take()
            {
                r.keep();
                // The echo pass wrote another result (the reference assumes each it writes).
                if let Some(a) = reserving
                    && plan.result.as_ref() != Some(&result)
                    && let Some(again) = a.assume(
                        &binding.key().to_string(),
                        &binding.spec,
                        &result,
                        healthy_clusters(&binding.status),
                    )
                {
                    again.keep();
                }
            }
            written.result = Some(result);
        }

        let closing = closing(binding, &plan, &written);
        if let Some(event) = &closing.event {
            self.tell(binding, std::slice::from_ref(event));
        }
        self.write_status(
            &key,
            written.stored.as_ref().unwrap_or(binding),
            &closing.status,
            &now,
        )
        .await?;
        match closing.error {
            Some(_) if closing.swallow => Ok(()),
            Some(e) => Err(CycleError::Failed(e)),
            None => Ok(()),
        }
    }

    /// Send planned events.
    fn tell(&self, binding: &Binding, events: &[PlannedEvent]) {
        for e in events {
            self.events
                .event(binding, e.warning, e.reason, e.message.clone());
        }
    }

    /// The pass the reference runs on the echo of our write: the clusters it would write for
    /// `stored` now, or `None` when it would not schedule.
    async fn echo_pass(&self, snapshot: &Snapshot, stored: &Binding) -> Option<Vec<TargetCluster>> {
        let input = self.input(snapshot, stored);
        match self.scheduler.schedule_binding(input, false).await.result {
            Ok(CoreDecision::Scheduled(r)) => Some(r),
            _ => None,
        }
    }
}
