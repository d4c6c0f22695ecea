//! One scheduling attempt for one binding: decide, run the algorithm, write.
//!
//! The cycle reads nothing but its arguments and talks to the API only through [`Writer`] and
//! [`EventSink`], so tests drive it with in-memory fakes and the daemon with the kube client.
//!
//! Writes (our improvement over the reference's three blind patches):
//! - the result patch carries a `metadata.resourceVersion` precondition: a result computed from
//!   a stale cache copy is rejected with 409 instead of overwriting a newer `spec.clusters`
//!   (e.g. a graceful eviction). The cycle then returns [`CycleError::Conflict`] and the caller
//!   re-reads the binding from the API and runs the cycle again on the fresh object;
//! - one status patch carries the `Scheduled` condition, the observed generation,
//!   `lastScheduledTime` and the observed affinity name. It is computed against the object the
//!   result patch returned (or the cache copy when no result patch was needed) and also carries
//!   the resourceVersion; on 409 only the status patch is recomputed on a fresh GET and resent,
//!   so a condition written meanwhile by another controller (`FullyApplied`) is never clobbered.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::work::TargetCluster;
use scheduler_core::features::MULTIPLE_POD_TEMPLATES_SCHEDULING;
use scheduler_core::schedule::{BindingInput, Decision as CoreDecision, Outcome, Scheduler};
use scheduler_core::snapshot::Snapshot;
use scheduler_core::{AssumptionSource, ScheduleError};
use serde_json::Value;

use crate::assume::{Assumptions, healthy_clusters};
use crate::model::annotation::encode_placement;
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::{ApiFailure, AttemptError, condition_for};
use crate::model::decision::{Decision, ScheduleType, always_rescheduled, decide};
use crate::own_writes::OwnWrites;
use crate::patch::{
    REASON_FAILED, REASON_SUCCEED, StatusUpdate, deleting_event_message, observed_generation_patch,
    result_patch, status_patch, success_event_message,
};

pub use crate::sink::{EventSink, Target, Writer};

/// Why a cycle did not finish normally.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CycleError {
    /// The result patch hit a newer object: re-read and run again.
    Conflict,
    /// The attempt failed; the queue retries it (with backoff, or parked when unschedulable).
    Failed(AttemptError),
}

/// What a cycle did, for the queue and the metrics.
#[derive(Clone, Debug)]
pub struct CycleReport {
    /// `Some` when the schedule procedure ran (rows 1–5 of the ladder).
    pub schedule_type: Option<ScheduleType>,
    pub result: Result<(), CycleError>,
    /// The algorithm's outcome with its trace, when [`Cycle::want_trace`] asked for it and
    /// the algorithm ran.
    pub outcome: Option<Outcome>,
}

/// Passes run for the echo of our own write of a Duplicated binding (one reorders at most;
/// the bound only guards against a result that would never settle).
const ECHO_PASSES: usize = 2;

/// Attempts at the status patch when it keeps conflicting with concurrent writers.
const STATUS_PATCH_ATTEMPTS: usize = 5;

/// The collaborators of a cycle.
pub struct Cycle<'a> {
    pub scheduler: &'a Scheduler,
    pub writer: &'a dyn Writer,
    pub events: &'a dyn EventSink,
    /// Other bindings, for the workload (anti-)affinity plugins (gate `WorkloadAffinity`).
    pub workload_index: Option<&'a dyn scheduler_core::framework::WorkloadGroupIndex>,
    /// Where the generation bump of our own result patch is announced, so that its watch
    /// event does not queue the binding again (see [`crate::own_writes`]).
    pub own_writes: Option<&'a OwnWrites>,
    /// The assumption cache (gate `SchedulingOvercommitProtection`; `None` with it off).
    pub assumptions: Option<&'a Assumptions>,
    /// Keep the algorithm's outcome and trace in the report (`simulate`, `explain`).
    pub want_trace: bool,
}

fn with_precondition(mut patch: Value, resource_version: Option<&str>) -> Value {
    if let (Some(rv), Value::Object(map)) = (resource_version, &mut patch) {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(meta) = meta {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
    patch
}

fn placement_error(binding: &Binding) -> String {
    match binding.kind {
        BindingKind::ResourceBinding => format!(
            "failed to get placement from resourceBinding({}/{})",
            binding.namespace(),
            binding.name()
        ),
        BindingKind::ClusterResourceBinding => {
            format!(
                "failed to get placement from clusterResourceBinding({})",
                binding.name()
            )
        }
    }
}

impl Cycle<'_> {
    /// Run one attempt on `binding` (the latest copy known) against `snapshot`, at time `now`.
    pub async fn run(&self, binding: &Binding, snapshot: &Snapshot, now: Time) -> CycleReport {
        let decision = self.decision(binding, snapshot);
        self.run_decided(binding, snapshot, now, decision).await
    }

    /// The decision ladder for `binding` against `snapshot`: what [`Cycle::run`] does.
    pub fn decision(&self, binding: &Binding, snapshot: &Snapshot) -> Decision {
        let clusters: Vec<&karmada_api::Cluster> =
            snapshot.clusters().iter().map(|c| c.as_ref()).collect();
        let multi = self
            .scheduler
            .config()
            .gates
            .enabled(MULTIPLE_POD_TEMPLATES_SCHEDULING);
        decide(binding, &clusters, multi)
    }

    /// [`Cycle::run`] with the decision made already (`simulate` and `explain` turn a
    /// decision not to act into [`Trigger::Requested`]).
    pub async fn run_decided(
        &self,
        binding: &Binding,
        snapshot: &Snapshot,
        now: Time,
        decision: Decision,
    ) -> CycleReport {
        match decision {
            Decision::Deleting => {
                self.events.event(
                    binding,
                    true,
                    REASON_FAILED,
                    deleting_event_message(binding),
                );
                CycleReport {
                    schedule_type: None,
                    result: Ok(()),
                    outcome: None,
                }
            }
            Decision::NoPlacement => CycleReport {
                schedule_type: None,
                outcome: None,
                result: Err(CycleError::Failed(AttemptError::Other(placement_error(
                    binding,
                )))),
            },
            Decision::UpToDate {
                sync_generation: None,
            } => CycleReport {
                schedule_type: None,
                result: Ok(()),
                outcome: None,
            },
            Decision::UpToDate {
                sync_generation: Some(generation),
            } => {
                let key = binding.key();
                let result = self
                    .writer
                    .patch(&key, Target::Status, observed_generation_patch(generation))
                    .await
                    .map(|_| ())
                    .map_err(|e| CycleError::Failed(e.into()));
                CycleReport {
                    schedule_type: None,
                    result,
                    outcome: None,
                }
            }
            Decision::Schedule(schedule_type, trigger) => {
                tracing::info!(binding = %binding.key(), ?trigger, "Start to schedule {}", binding.key().describe());
                let (result, outcome) = self.schedule(binding, snapshot, now).await;
                CycleReport {
                    schedule_type: Some(schedule_type),
                    result,
                    outcome,
                }
            }
        }
    }

    /// Schedule and write, with our write sequence.
    async fn schedule(
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
        // cycles never spend the same free capacity (see `crate::assume`).
        let reserving = self
            .assumptions
            .filter(|_| binding.kind == BindingKind::ResourceBinding && binding.spec.is_workload());
        let reservation_lock = match reserving {
            Some(a) => Some(a.reserve().await),
            None => None,
        };
        let input = BindingInput {
            snapshot,
            spec: &binding.spec,
            status: &binding.status,
            workload_index: self.workload_index,
            assumed: self.assumptions.map(|a| a as &dyn AssumptionSource),
        };
        let outcome = self
            .scheduler
            .schedule_binding(input, self.want_trace)
            .await;
        if self.want_trace {
            *kept = Some(outcome.clone());
        }
        for term in &outcome.failed_terms {
            self.events.event(
                binding,
                true,
                REASON_FAILED,
                format!(
                    "failed to schedule {} with clusterAffiliates index({}): {}",
                    key.describe(),
                    term.index,
                    term.error
                ),
            );
        }
        let uses_terms = placement.cluster_affinities.is_some();

        // The result to write, if any, and the algorithm error that goes with it.
        let (to_write, algo_err): (Option<Vec<TargetCluster>>, Option<ScheduleError>) =
            match outcome.result {
                Ok(CoreDecision::Scheduled(result)) => (Some(result), None),
                Ok(CoreDecision::NoAffinityTerms) => (None, None),
                Err(e @ ScheduleError::Fit(_)) => (Some(Vec::new()), Some(e)),
                Err(e) => {
                    if !uses_terms {
                        self.events
                            .event(binding, true, REASON_FAILED, e.to_string());
                    }
                    (None, Some(e))
                }
            };

        // Reserve what is about to be written; rolled back if the write is refused.
        let mut reservation = None;
        if let (Some(a), Some(result)) = (reserving, &to_write)
            && result_patch(binding, &placement_json, result).is_some()
        {
            let key = format!("{}/{}", binding.namespace(), binding.name());
            reservation = a.assume(
                &key,
                &binding.spec,
                result,
                healthy_clusters(&binding.status),
            );
        }
        drop(reservation_lock);

        let mut fresh: Option<Binding> = None;
        let mut final_err: Option<AttemptError> = algo_err.clone().map(AttemptError::Schedule);
        if let Some(result) = &to_write {
            let mut patch_err = None;
            let mut result = result.clone();
            let mut passes = 0;
            loop {
                let base = fresh.as_ref().unwrap_or(binding);
                let Some(patch) = result_patch(base, &placement_json, &result) else {
                    break;
                };
                let bumps_generation = patch.get("spec").is_some();
                let stored = match self.send_result(&key, base, patch, bumps_generation).await {
                    Ok(stored) => stored,
                    Err(e) if e.is_conflict() => return Err(CycleError::Conflict),
                    // No verdict on the write, which may have landed: no failure status either
                    // (it could overwrite the status of a write that did land, and tells
                    // nothing). The binding is retried as soon as the server answers; if the
                    // patch landed, its marker makes the retry complete it. The reservation
                    // stays meanwhile: the write may have landed.
                    Err(e) if e.is_transient() => {
                        if let Some(r) = reservation.take() {
                            r.keep();
                        }
                        return Err(CycleError::Failed(AttemptError::Api(e)));
                    }
                    Err(e) => {
                        patch_err = Some(AttemptError::Api(e));
                        break;
                    }
                };
                // The reference schedules a Duplicated or non-workload binding again when the
                // watch event of its own `spec.clusters` write comes back, and the clusters
                // it already holds then score higher (ClusterLocality), which can reorder
                // them. That echo is not queued here (see `own_writes`), so run the same pass
                // now, against the same snapshot, and write the order it converges to.
                passes += 1;
                let echo =
                    bumps_generation && passes <= ECHO_PASSES && always_rescheduled(&binding.spec);
                let again = if echo {
                    self.echo_pass(snapshot, &stored).await
                } else {
                    None
                };
                fresh = Some(stored);
                match again {
                    Some(r) => result = r,
                    None => break,
                }
            }
            let result = &result;
            if fresh.is_some()
                && let Some(r) = reservation.take()
            {
                r.keep();
                // The echo pass wrote another result (the reference assumes each it writes).
                if let Some(a) = reserving
                    && to_write.as_ref() != Some(result)
                    && let Some(again) = a.assume(
                        &format!("{}/{}", binding.namespace(), binding.name()),
                        &binding.spec,
                        result,
                        healthy_clusters(&binding.status),
                    )
                {
                    again.keep();
                }
            }
            if let Some(pe) = patch_err {
                let mut members: Vec<AttemptError> = Vec::new();
                if let Some(e) = final_err.take() {
                    members.push(e);
                }
                members.push(pe);
                final_err = AttemptError::aggregate(members);
            }
            match &final_err {
                None => self.events.event(
                    binding,
                    false,
                    REASON_SUCCEED,
                    success_event_message(binding.kind, result),
                ),
                Some(e) => self
                    .events
                    .event(binding, true, REASON_FAILED, e.to_string()),
            }
        }

        let (condition, swallow) = condition_for(final_err.as_ref());
        let succeeded = algo_err.is_none();
        let update = StatusUpdate {
            condition,
            // The generation our own result patch produced when there was one: it is the
            // scheduled spec plus our `spec.clusters` (the patch was preconditioned), so the
            // reference's later sync of the observed generation is not needed.
            scheduled_generation: final_err
                .is_none()
                .then(|| fresh.as_ref().unwrap_or(binding).generation()),
            affinity_name: if succeeded {
                outcome.affinity_name.clone()
            } else {
                None
            },
        };
        self.write_status(&key, fresh.as_ref().unwrap_or(binding), &update, &now)
            .await?;
        match final_err {
            Some(_) if swallow => Ok(()),
            Some(e) => Err(CycleError::Failed(e)),
            None => Ok(()),
        }
    }

    /// Send a result patch computed against `base`, preconditioned on its resourceVersion;
    /// a patch that bumps the generation is announced to `own_writes` first (and withdrawn if
    /// it fails), so that its watch echo is not queued.
    async fn send_result(
        &self,
        key: &BindingKey,
        base: &Binding,
        patch: Value,
        bumps_generation: bool,
    ) -> Result<Binding, ApiFailure> {
        let patch = with_precondition(patch, base.resource_version());
        let own = self.own_writes.filter(|_| bumps_generation);
        if let Some(own) = own {
            own.expect(key, base.generation());
        }
        let sent = self.writer.patch(key, Target::Main, patch).await;
        if let (Err(_), Some(own)) = (&sent, own) {
            own.withdraw(key);
        }
        sent
    }

    /// The pass the reference runs on the echo of our write: the clusters it would write for
    /// `stored` now, or `None` when it would not schedule.
    async fn echo_pass(&self, snapshot: &Snapshot, stored: &Binding) -> Option<Vec<TargetCluster>> {
        let input = BindingInput {
            snapshot,
            spec: &stored.spec,
            status: &stored.status,
            workload_index: self.workload_index,
            assumed: self.assumptions.map(|a| a as &dyn AssumptionSource),
        };
        match self.scheduler.schedule_binding(input, false).await.result {
            Ok(CoreDecision::Scheduled(r)) => Some(r),
            _ => None,
        }
    }

    /// Send the status patch against `base`, re-reading and recomputing on conflicts.
    async fn write_status(
        &self,
        key: &BindingKey,
        base: &Binding,
        update: &StatusUpdate,
        now: &Time,
    ) -> Result<(), CycleError> {
        let mut base = base.clone();
        for _ in 0..STATUS_PATCH_ATTEMPTS {
            let Some(patch) = status_patch(&base.status, update, now) else {
                return Ok(());
            };
            let patch = with_precondition(patch, base.resource_version());
            match self.writer.patch(key, Target::Status, patch).await {
                Ok(_) => return Ok(()),
                Err(e) if e.is_conflict() => match self.writer.get(key).await {
                    Ok(b) => base = b,
                    Err(e) => return Err(CycleError::Failed(e.into())),
                },
                Err(e) => return Err(CycleError::Failed(e.into())),
            }
        }
        Err(CycleError::Failed(AttemptError::Other(format!(
            "status of {} kept changing during {STATUS_PATCH_ATTEMPTS} attempts",
            key.describe()
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use scheduler_core::estimator::BoxFuture;
    use scheduler_core::schedule::ScheduleConfig;
    use serde_json::json;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use crate::memory::MemoryStore;

    /// The daemon's [`MemoryStore`] holding one binding, with a log of the writes and
    /// scripted faults.
    struct FakeApi {
        store: MemoryStore,
        key: BindingKey,
        log: Mutex<Vec<(Target, Value)>>,
        /// Scripted faults of the next writes, in order (`Fault::None` = answer normally).
        faults: Mutex<VecDeque<Fault>>,
    }

    /// What goes wrong with one write.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Fault {
        None,
        /// Refused or reset before the server saw it.
        NotSent,
        /// Applied by the server, the answer lost on the way back.
        ResponseLost,
        /// `503 Service Unavailable`, not applied.
        Unavailable,
        /// Refused with this answer, not applied.
        Rejected(ApiFailure),
    }

    impl FakeApi {
        fn new(object: Value) -> Self {
            let store = MemoryStore::default();
            let key = store
                .insert(BindingKind::ResourceBinding, object)
                .expect("a valid binding")
                .key();
            Self {
                store,
                key,
                log: Mutex::new(Vec::new()),
                faults: Mutex::new(VecDeque::new()),
            }
        }

        fn binding(&self) -> Binding {
            self.store.binding(&self.key).expect("stored")
        }

        /// Someone else writes the object (bumps resourceVersion).
        fn external_write(&self, patch: Value) {
            self.store.external_write(&self.key, &patch);
        }

        fn apply(&self, target: Target, patch: &Value) -> Result<Binding, ApiFailure> {
            self.store.apply(&self.key, target, patch)
        }
    }

    impl Writer for FakeApi {
        fn patch<'a>(
            &'a self,
            _key: &'a BindingKey,
            target: Target,
            patch: Value,
        ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
            Box::pin(async move {
                self.log.lock().unwrap().push((target, patch.clone()));
                let lost = |message: &str| ApiFailure {
                    code: 0,
                    reason: String::new(),
                    message: message.into(),
                };
                match self.faults.lock().unwrap().pop_front() {
                    Some(Fault::NotSent) => return Err(lost("connection refused")),
                    Some(Fault::Unavailable) => {
                        return Err(ApiFailure {
                            code: 503,
                            reason: "ServiceUnavailable".into(),
                            message: "the server is currently unable to handle the request".into(),
                        });
                    }
                    Some(Fault::Rejected(f)) => return Err(f),
                    Some(Fault::ResponseLost) => {
                        self.apply(target, &patch)?;
                        return Err(lost("connection reset by peer"));
                    }
                    Some(Fault::None) | None => {}
                }
                self.apply(target, &patch)
            })
        }

        fn get<'a>(&'a self, _key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
            Box::pin(async move { Ok(self.binding()) })
        }
    }

    #[derive(Default)]
    struct Events(Mutex<Vec<(bool, &'static str, String)>>);
    impl EventSink for Events {
        fn event(&self, _b: &Binding, warning: bool, reason: &'static str, message: String) {
            self.0.lock().unwrap().push((warning, reason, message));
        }
    }

    fn cluster(name: &str) -> karmada_api::Cluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name}, "spec": {},
            "status": {
                "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "resourceSummary": {"allocatable": {"pods": "100", "cpu": "100"}}
            }
        }))
        .unwrap()
    }

    fn binding_json(placement: Value, replicas: i32) -> Value {
        json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "b", "namespace": "ns", "generation": 2,
                         "labels": {"binding.karmada.io/managed-by": "x"}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"},
                     "replicas": replicas, "placement": placement}
        })
    }

    fn cycle<'a>(
        scheduler: &'a Scheduler,
        api: &'a FakeApi,
        events: &'a Events,
        own_writes: Option<&'a OwnWrites>,
    ) -> Cycle<'a> {
        Cycle {
            scheduler,
            writer: api,
            events,
            workload_index: None,
            own_writes,
            assumptions: None,
            want_trace: false,
        }
    }

    fn now() -> Time {
        Time("2026-07-01T10:00:00Z".parse().unwrap())
    }

    fn scheduler() -> Scheduler {
        Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default()).unwrap()
    }

    /// A writer whose answers take a while, as a real API server's do.
    struct Slow<'a>(&'a FakeApi);

    impl Writer for Slow<'_> {
        fn patch<'a>(
            &'a self,
            key: &'a BindingKey,
            target: Target,
            patch: Value,
        ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                self.0.patch(key, target, patch).await
            })
        }

        fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
            self.0.get(key)
        }
    }

    /// With `SchedulingOvercommitProtection`, two bindings scheduled at the same time into a
    /// cluster with room for one never both get it: the first reserves before its write, the
    /// second's estimate already counts that. Without the gate both are placed (the cluster
    /// is overcommitted), as the reference would too if it scheduled concurrently.
    #[tokio::test(start_paused = true)]
    async fn concurrent_cycles_do_not_spend_the_same_capacity() {
        let placed = |gate: bool| async move {
            let wants = |name: &str| {
                let mut o = binding_json(
                    json!({"clusterAffinity": {"clusterNames": ["m1"]},
                           "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                 "replicaDivisionPreference": "Aggregated"}}),
                    3,
                );
                o["metadata"]["name"] = json!(name);
                o["spec"]["resource"]["name"] = json!(name);
                o["spec"]["replicaRequirements"] = json!({"resourceRequest": {"cpu": "30"}});
                FakeApi::new(o)
            };
            let (a, b) = (wants("a"), wants("b"));
            let (slow_a, slow_b) = (Slow(&a), Slow(&b));
            let events = Events::default();
            let s = scheduler().with_estimator(std::sync::Arc::new(
                scheduler_core::general::GeneralEstimator::default(),
            ));
            let snapshot = Snapshot::from_clusters([cluster("m1")]);
            let assumptions = Assumptions::default();
            let cycle_of = |writer| Cycle {
                writer,
                assumptions: gate.then_some(&assumptions),
                ..cycle(&s, &a, &events, None)
            };
            let (ca, cb) = (cycle_of(&slow_a), cycle_of(&slow_b));
            let (ba, bb) = (a.binding(), b.binding());
            let _ = tokio::join!(ca.run(&ba, &snapshot, now()), cb.run(&bb, &snapshot, now()));
            [a.binding(), b.binding()]
                .iter()
                .map(|x| x.spec.clusters.iter().map(|c| c.replicas).sum::<i32>())
                .sum::<i32>()
        };
        // m1 has 100 CPUs; each binding asks 3 × 30.
        assert_eq!(placed(false).await, 6, "without the gate both are placed");
        assert_eq!(placed(true).await, 3, "with it, only one");
    }

    /// The daemon's step timer observes the algorithm histogram once per step per cycle,
    /// with the reference's `schedule_step` labels.
    #[tokio::test]
    async fn one_cycle_observes_every_algorithm_step() {
        // Divided, so that one pass runs (a Duplicated binding gets the echo pass too).
        let api = FakeApi::new(binding_json(
            json!({"clusterAffinity": {"clusterNames": ["m1"]},
                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                                         "replicaDivisionPreference": "Aggregated"}}),
            2,
        ));
        let events = Events::default();
        let metrics = std::sync::Arc::new(crate::metrics::Metrics::new());
        let s = scheduler().with_step_observer(std::sync::Arc::new(
            crate::metrics::StepTimer::new(metrics.clone()),
        ));
        let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let cycle = cycle(&s, &api, &events, None);
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert_eq!(report.result, Ok(()));
        let text = metrics.encode().unwrap();
        for step in ["Filter", "Score", "Select", "AssignReplicas"] {
            let sample = format!(
                "karmada_scheduler_scheduling_algorithm_duration_seconds_count{{schedule_step=\"{step}\"}} 1\n"
            );
            assert!(text.contains(&sample), "{sample} missing in\n{text}");
        }
        // m2 fails the affinity, m1 passes; the score plugins run once; the plugin calls of
        // this first binding are within the sampling budget.
        for sample in [
            r#"karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",result="Success"} 1"#,
            r#"karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",result="Unschedulable"} 1"#,
            r#"karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point="Score",result="Success"} 1"#,
            r#"karmada_scheduler_plugin_execution_duration_seconds_count{plugin="ClusterAffinity",extension_point="Filter",result="Unschedulable"} 1"#,
            r#"karmada_scheduler_plugin_execution_duration_seconds_count{plugin="ClusterAffinity",extension_point="ScoreExtensionNormalize",result="Success"} 1"#,
        ] {
            assert!(text.contains(sample), "{sample} missing in\n{text}");
        }
    }

    /// A Duplicated binding that already holds some clusters: the reference's echo pass
    /// (the watch event of its own write) sees every chosen cluster as held and writes the
    /// order that converges; one status patch follows.
    #[tokio::test]
    async fn duplicated_result_converges_like_the_echo_pass() {
        let mut object = binding_json(
            json!({"clusterAffinity": {"clusterNames": ["m1", "m2", "m3"]}}),
            2,
        );
        object["spec"]["clusters"] = json!([{"name": "m3", "replicas": 2}]);
        let api = FakeApi::new(object);
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2"), cluster("m3")]);
        let own = OwnWrites::default();
        let cycle = cycle(&s, &api, &events, Some(&own));
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert_eq!(report.result, Ok(()));
        let log = api.log.lock().unwrap().clone();
        let mains: Vec<&Value> = log
            .iter()
            .filter(|(t, _)| *t == Target::Main)
            .map(|(_, p)| &p["spec"]["clusters"])
            .collect();
        let statuses = log.iter().filter(|(t, _)| *t == Target::Status).count();
        // ClusterLocality puts the held m3 first; once all three are held, the order is
        // the snapshot's again.
        assert_eq!(
            mains,
            [
                &json!([{"name": "m3", "replicas": 2}, {"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
                &json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}, {"name": "m3", "replicas": 2}]),
            ]
        );
        assert_eq!(statuses, 1);
        assert!(own.is_echo(&api.binding().key(), api.binding().generation()));
        // What a second pass over the stored object gives is what is stored.
        let stored = api.binding();
        let again = s
            .schedule_binding(
                BindingInput {
                    snapshot: &snapshot,
                    spec: &stored.spec,
                    status: &stored.status,
                    workload_index: None,
                    assumed: None,
                },
                false,
            )
            .await;
        match again.result {
            Ok(CoreDecision::Scheduled(r)) => assert_eq!(r, stored.spec.clusters),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            api.binding().status.scheduler_observed_generation,
            api.binding().generation()
        );
    }

    /// The daemon's retry of one binding, reduced to its rules: each attempt starts from the
    /// copy the watch would hold (`stale`: the one the decision was first made on, as when the
    /// echo has not arrived; otherwise the server's), a conflict re-reads and runs again, any
    /// other failure is tried again later. Returns the attempts it took.
    async fn retry_until_done(
        cycle: &Cycle<'_>,
        api: &FakeApi,
        first: &Binding,
        snapshot: &Snapshot,
    ) -> usize {
        for attempt in 1..=20 {
            let mut b = if attempt % 2 == 0 {
                first.clone()
            } else {
                api.binding()
            };
            for _ in 0..4 {
                match cycle.run(&b, snapshot, now()).await.result {
                    Err(CycleError::Conflict) => b = api.binding(),
                    Ok(()) => return attempt,
                    Err(CycleError::Failed(e)) => {
                        assert!(e.is_transient(), "only the scripted faults fail: {e}");
                        break;
                    }
                }
            }
        }
        panic!("not done after 20 attempts: {:?}", api.binding());
    }

    /// Every script of faults over the first three writes (refused, 503, applied with the
    /// answer lost), with the retries reading a stale or a fresh copy: the binding always ends
    /// with the placement and the status of one decision, and is never written with a second
    /// placement. A new process finds an unfinished binding from the object alone (the odd
    /// attempts start from the server's copy, as a restarted scheduler's list would).
    #[tokio::test]
    async fn every_fault_script_ends_with_placement_and_status() {
        use Fault::*;
        let kinds = [None, NotSent, Unavailable, ResponseLost];
        let strategies = [
            json!({"clusterAffinity": {"clusterNames": ["m1", "m2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
            json!({"clusterAffinity": {"clusterNames": ["m1", "m2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                         "weightPreference": {"staticWeightList": [
                                             {"targetCluster": {"clusterNames": ["m1"]}, "weight": 1},
                                             {"targetCluster": {"clusterNames": ["m2"]}, "weight": 2}]}}}),
            json!({"clusterAffinity": {"clusterNames": ["m1", "m2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
        ];
        let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let s = scheduler();
        for placement in &strategies {
            // The placement a fault-free run writes.
            let clean = FakeApi::new(binding_json(placement.clone(), 3));
            let events = Events::default();
            let own = OwnWrites::default();
            cycle(&s, &clean, &events, Some(&own))
                .run(&clean.binding(), &snapshot, now())
                .await;
            let want = clean.binding().spec.clusters;
            assert!(!want.is_empty());
            for script in 0..kinds.len().pow(3) {
                let faults: Vec<Fault> = (0..3)
                    .map(|i| kinds[script / kinds.len().pow(i) % kinds.len()].clone())
                    .collect();
                let api = FakeApi::new(binding_json(placement.clone(), 3));
                *api.faults.lock().unwrap() = faults.iter().cloned().collect();
                let first = api.binding();
                let own = OwnWrites::default();
                let cycle = cycle(&s, &api, &events, Some(&own));
                retry_until_done(&cycle, &api, &first, &snapshot).await;
                let b = api.binding();
                let case = format!("{placement} with {faults:?}");
                assert_eq!(b.spec.clusters, want, "{case}");
                assert_eq!(
                    b.status.scheduler_observed_generation,
                    b.generation(),
                    "{case}"
                );
                let scheduled: Vec<_> = b
                    .status
                    .conditions
                    .iter()
                    .filter(|c| c.type_ == "Scheduled")
                    .collect();
                assert_eq!(scheduled.len(), 1, "{case}");
                assert_eq!(
                    (scheduled[0].status.as_str(), scheduled[0].reason.as_str()),
                    ("True", "Success"),
                    "{case}"
                );
                assert!(b.status.last_scheduled_time.is_some(), "{case}");
                assert!(!crate::model::decision::unfinished_write(&b), "{case}");
                // Every placement written is the one decision's.
                let log = api.log.lock().unwrap().clone();
                for (target, patch) in &log {
                    if let (Target::Main, Some(c)) = (target, patch.pointer("/spec/clusters")) {
                        let written: Vec<TargetCluster> =
                            serde_json::from_value(c.clone()).unwrap();
                        assert!(
                            written == want
                                || written
                                    .iter()
                                    .map(|t| &t.name)
                                    .collect::<std::collections::BTreeSet<_>>()
                                    == want.iter().map(|t| &t.name).collect(),
                            "{case}: wrote {c}"
                        );
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn first_schedule_writes_result_then_one_status_patch() {
        let api = FakeApi::new(binding_json(
            json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
            0,
        ));
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let own = OwnWrites::default();
        let cycle = cycle(&s, &api, &events, Some(&own));
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert_eq!(
            (report.schedule_type, report.result),
            (Some(ScheduleType::ReconcileSchedule), Ok(()))
        );
        let log = api.log.lock().unwrap().clone();
        assert_eq!(log.len(), 2);
        assert_eq!(
            log[0],
            (
                Target::Main,
                json!({
                    "metadata": {"annotations": {"policy.karmada.io/applied-placement": r#"{"clusterAffinity":{"clusterNames":["m1"]}}"#,
                                                 "karmada-scheduler-rs.io/result-generation": "3"},
                                 "resourceVersion": "1"},
                    "spec": {"clusters": [{"name": "m1"}]}
                })
            )
        );
        assert_eq!(
            log[1],
            (
                Target::Status,
                json!({
                    "metadata": {"resourceVersion": "2"},
                    "status": {"conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                               "message": "Binding has been scheduled successfully.", "lastTransitionTime": "2026-07-01T10:00:00Z"}],
                               "lastScheduledTime": "2026-07-01T10:00:00Z", "schedulerObservedGeneration": 3}
                })
            )
        );
        // Generation 3 is our own write: observed at once, and its watch event is an echo.
        assert_eq!(api.binding().generation(), 3);
        assert!(own.is_echo(&api.binding().key(), 3));
        assert_eq!(
            events.0.lock().unwrap().clone(),
            vec![(
                false,
                "ScheduleBindingSucceed",
                "Binding has been scheduled successfully. Result: {m1:0}".to_string()
            )]
        );
        // Nothing changed: a second cycle only rewrites lastScheduledTime (Duplicated rule).
        let later = Time("2026-07-01T10:00:05Z".parse().unwrap());
        cycle.run(&api.binding(), &snapshot, later).await;
        let log = api.log.lock().unwrap().clone();
        assert_eq!(log.len(), 3);
        assert_eq!(
            log[2].1["status"],
            json!({"lastScheduledTime": "2026-07-01T10:00:05Z"})
        );
    }

    #[tokio::test]
    async fn no_fit_clears_clusters_and_is_not_retried() {
        let mut obj = binding_json(json!({"clusterAffinity": {"clusterNames": ["gone"]}}), 0);
        obj["spec"]["clusters"] = json!([{"name": "m1"}]);
        let api = FakeApi::new(obj);
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1")]);
        let cycle = cycle(&s, &api, &events, None);
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert_eq!(report.result, Ok(()));
        let b = api.binding();
        assert!(b.spec.clusters.is_empty());
        let cond = &b.status.conditions[0];
        assert_eq!(
            (cond.reason.as_str(), cond.status.as_str()),
            ("NoClusterFit", "False")
        );
        assert_eq!(
            cond.message,
            "0/1 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint."
        );
        assert_eq!(
            b.status.scheduler_observed_generation, 0,
            "failure does not observe the generation"
        );
        assert_eq!(events.0.lock().unwrap()[0].1, "ScheduleBindingFailed");
    }

    #[tokio::test]
    async fn stale_cache_result_is_rejected_and_reported_as_conflict() {
        let api = FakeApi::new(binding_json(
            json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
            0,
        ));
        let stale = api.binding();
        api.external_write(json!({"spec": {"clusters": [{"name": "m2"}]}}));
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1")]);
        let cycle = cycle(&s, &api, &events, None);
        let report = cycle.run(&stale, &snapshot, now()).await;
        assert_eq!(report.result, Err(CycleError::Conflict));
        assert_eq!(
            api.binding().spec.clusters[0].name,
            "m2",
            "newer write kept"
        );
        // Rerun on the fresh object succeeds.
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert_eq!(report.result, Ok(()));
        assert_eq!(api.binding().spec.clusters[0].name, "m1");
    }

    #[tokio::test]
    async fn status_conflict_recomputes_on_the_fresh_object() {
        let api = FakeApi::new(binding_json(
            json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
            0,
        ));
        let events = Events::default();
        let s = scheduler();
        let cycle = cycle(&s, &api, &events, None);
        // Another controller adds FullyApplied between our two writes.
        let b = api.binding();
        // Simulate: result patch goes through, then FullyApplied lands, then our status patch.
        let patch = result_patch(
            &b,
            &encode_placement(b.spec.placement.as_ref().unwrap()),
            &[TargetCluster::new("m1", 0)],
        )
        .unwrap();
        let stored = api.patch(&b.key(), Target::Main, patch).await.unwrap();
        api.external_write(json!({"status": {"conditions": [{"type": "FullyApplied", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": "2026-07-01T09:00:00Z"}]}}));
        let update = StatusUpdate {
            condition: condition_for(None).0,
            scheduled_generation: Some(2),
            affinity_name: None,
        };
        cycle
            .write_status(&b.key(), &stored, &update, &now())
            .await
            .unwrap();
        let types: Vec<String> = api
            .binding()
            .status
            .conditions
            .iter()
            .map(|c| c.type_.clone())
            .collect();
        assert_eq!(types, vec!["FullyApplied", "Scheduled"]);
    }

    #[tokio::test]
    async fn failed_result_patch_is_aggregated_into_the_condition() {
        let api = FakeApi::new(binding_json(
            json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
            0,
        ));
        api.faults
            .lock()
            .unwrap()
            .push_back(Fault::Rejected(ApiFailure {
                code: 403,
                reason: "QuotaExceeded".into(),
                message: "admission webhook denied the request: quota exceeded".into(),
            }));
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1")]);
        let cycle = cycle(&s, &api, &events, None);
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert!(matches!(report.result, Err(CycleError::Failed(_))));
        let b = api.binding();
        assert_eq!(b.status.conditions[0].reason, "QuotaExceeded");
        assert_eq!(
            b.status.conditions[0].message,
            "admission webhook denied the request: quota exceeded"
        );
        assert!(b.spec.clusters.is_empty());
    }

    #[tokio::test]
    async fn up_to_date_binding_only_syncs_the_generation() {
        let mut obj = binding_json(
            json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}),
            2,
        );
        obj["metadata"]["annotations"] = json!({"policy.karmada.io/applied-placement": r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted"}}"#});
        obj["spec"]["clusters"] = json!([{"name": "m1", "replicas": 2}]);
        obj["status"] = json!({"schedulerObservedGeneration": 1});
        let api = FakeApi::new(obj);
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1")]);
        let cycle = cycle(&s, &api, &events, None);
        let report = cycle.run(&api.binding(), &snapshot, now()).await;
        assert_eq!((report.schedule_type, report.result), (None, Ok(())));
        assert_eq!(
            api.log.lock().unwrap().clone(),
            vec![(
                Target::Status,
                json!({"status": {"schedulerObservedGeneration": 2}})
            )]
        );
        assert!(events.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn affinity_terms_fail_over_and_record_the_observed_name() {
        let placement = json!({"clusterAffinities": [
            {"affinityName": "primary", "clusterNames": ["gone"]},
            {"affinityName": "backup", "clusterNames": ["m1"]}
        ]});
        let api = FakeApi::new(binding_json(placement, 0));
        let events = Events::default();
        let s = scheduler();
        let snapshot = Snapshot::from_clusters([cluster("m1")]);
        let cycle = cycle(&s, &api, &events, None);
        assert_eq!(
            cycle.run(&api.binding(), &snapshot, now()).await.result,
            Ok(())
        );
        let b = api.binding();
        assert_eq!(b.status.scheduler_observed_affinity_name, "backup");
        assert_eq!(b.spec.clusters, vec![TargetCluster::new("m1", 0)]);
        let ev = events.0.lock().unwrap().clone();
        assert_eq!(ev.len(), 2);
        assert_eq!(
            ev[0].2,
            "failed to schedule ResourceBinding(ns/b) with clusterAffiliates index(0): 0/1 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint."
        );
        assert_eq!(ev[1].1, "ScheduleBindingSucceed");
    }
}
