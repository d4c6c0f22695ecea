//! One attempt at one binding as a state machine: [`Attempt::start`] (or
//! [`Attempt::malformed`]), then [`Attempt::on`] for each answer (the algorithm's outcome,
//! the server's answer to a write or a read), return what to do next as [`Effect`]s, plain
//! values. Every rule of an attempt is here: the malformed binding's condition, the deletion
//! event, the observed-generation sync, the result patch and its echo passes, the reservation
//! in the assumption cache, the status patch re-read on conflicts, and the fresh read and new
//! decision after a conflicting write. No I/O, no clock, no lock: the executor
//! (`execute.rs`) sends the effects and decides nothing, so each retry rule is a unit test
//! feeding answers. A batch of effects ends with one request ([`Effect::Schedule`],
//! [`Effect::Echo`], [`Effect::Patch`], [`Effect::Reread`]), answered by the next
//! [`Attempt::on`], or with [`Effect::Done`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::work::TargetCluster;
use scheduler_core::schedule::{Decision as CoreDecision, Outcome};
use scheduler_core::snapshot::Snapshot;
use serde_json::Value;

use crate::cycle::CycleError;
use crate::cycle::patch::{
    StatusUpdate, deleting_event_message, observed_generation_patch, result_patch, status_patch,
};
use crate::cycle::plan::{Closing, Plan, PlannedEvent, Written, closing, plan};
use crate::cycle::sink::Target;
use crate::model::annotation::encode_placement;
use crate::model::binding::{Binding, BindingKind};
use crate::model::condition::{ApiFailure, AttemptError, ScheduledCondition};
use crate::model::decision::{Decision, ScheduleType, Trigger, always_rescheduled, decide};

/// Passes run for the echo of our own write of a Duplicated binding (one reorders at most;
/// the bound only guards against a result that would never settle).
const ECHO_PASSES: usize = 2;
/// Status patches sent while the status keeps changing under them.
const STATUS_PATCH_ATTEMPTS: usize = 5;

/// What to do next, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Record this Event on the binding and its template.
    Event(PlannedEvent),
    /// Run the algorithm on the binding; `exclusive`: under the assumption cache's lock, held
    /// until [`Effect::Unlock`], so that concurrent cycles never spend the same capacity.
    Schedule { trigger: Trigger, exclusive: bool },
    /// Assume this result for the binding; rolled back unless kept.
    Reserve(Vec<TargetCluster>),
    /// Give the assumption cache's lock back.
    Unlock,
    /// The reserved result landed (or may have): the assumption stays.
    Keep,
    /// It did not: roll the reservation back.
    Release,
    /// Send this patch of the binding.
    Patch(Patch),
    /// Read the binding from the server.
    Reread,
    /// Run the algorithm on the object our result patch stored, as the reference does when
    /// that write's watch event comes back (not queued here, see `controller::own_writes`).
    Echo(Box<Binding>),
    /// The attempt is over.
    Done(Result<(), CycleError>),
}

/// A merge patch of the binding, computed against one copy of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Patch {
    pub target: Target,
    pub body: Value,
    /// That copy's resourceVersion: the server refuses the patch (409) once the object moved.
    pub precondition: Option<String>,
    /// That copy's generation; a result patch is announced with it to the after-write hook.
    pub generation: i64,
}

impl Patch {
    fn on(base: &Binding, target: Target, body: Value) -> Effect {
        Effect::Patch(Self {
            target,
            body,
            precondition: base.resource_version().map(str::to_string),
            generation: base.generation(),
        })
    }

    /// Whether it changes the spec, which bumps the generation.
    pub fn bumps_generation(&self) -> bool {
        self.target == Target::Main && self.body.get("spec").is_some()
    }
}

/// The answer to the request that ended a batch.
#[derive(Clone, Debug)]
pub enum Answer {
    /// For [`Effect::Schedule`] and [`Effect::Echo`].
    Outcome(Outcome),
    /// For [`Effect::Patch`] (the object stored) and [`Effect::Reread`].
    Object(Result<Box<Binding>, ApiFailure>),
}

/// The settings of an attempt.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rules {
    /// The `MultiplePodTemplatesScheduling` gate, for the decision ladder.
    pub multiple_pod_templates: bool,
    /// An assumption cache is kept (`SchedulingOvercommitProtection`).
    pub reserving: bool,
    /// Decisions made again, each on a fresh read, after a write met a newer object (the
    /// daemon's). With any, the conflict of the last is read too, so that a binding deleted
    /// meanwhile ends the attempt as done; with none, a conflict ends it at once.
    pub rereads: usize,
}

/// One attempt (see the module).
pub struct Attempt<'s> {
    snapshot: &'s Snapshot,
    rules: Rules,
    now: Time,
    /// The copy decided on.
    binding: Binding,
    rereads: usize,
    schedule_type: Option<ScheduleType>,
    outcome: Option<Outcome>,
    state: State,
    /// The effects of the call under way.
    out: Vec<Effect>,
}

/// What the attempt waits for.
enum State {
    Idle,
    /// The observed-generation patch's answer.
    Syncing,
    /// The algorithm's outcome.
    Scheduling {
        exclusive: bool,
    },
    /// A result patch's answer, or an echo pass's outcome.
    Writing(Box<Writing>),
    /// The status patch's answer, or the read after its conflict.
    Status(Box<Status>),
    /// The read after a conflicting write.
    Rereading,
    /// A malformed binding's condition patch; the message is told once it is answered.
    Malformed(String),
}

struct Writing {
    plan: Plan,
    placement: String,
    /// The result being written: the plan's, then each echo pass's.
    result: Vec<TargetCluster>,
    written: Written,
    passes: usize,
    /// The patch in flight changes the spec.
    bumps: bool,
    /// A reservation is held.
    reserved: bool,
}

struct Status {
    closing: Closing,
    /// The copy the patch is computed against; `None`: the one decided on.
    base: Option<Binding>,
    sent: usize,
    reading: bool,
}

fn failed(e: AttemptError) -> Effect {
    Effect::Done(Err(CycleError::Failed(e)))
}

/// The decision ladder for `binding` against the clusters of `snapshot`.
pub fn decision(binding: &Binding, snapshot: &Snapshot, multiple_pod_templates: bool) -> Decision {
    let clusters: Vec<&karmada_api::Cluster> =
        snapshot.clusters().iter().map(|c| c.as_ref()).collect();
    decide(binding, &clusters, multiple_pod_templates)
}

impl<'s> Attempt<'s> {
    /// An attempt on `binding` (the latest copy known) against `snapshot`, at time `now`.
    pub fn new(snapshot: &'s Snapshot, rules: Rules, binding: Binding, now: Time) -> Self {
        let (rereads, schedule_type, outcome, state) = (0, None, None, State::Idle);
        let out = Vec::new();
        Self {
            snapshot,
            rules,
            now,
            binding,
            rereads,
            schedule_type,
            outcome,
            state,
            out,
        }
    }

    /// The copy the attempt is deciding on now.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// `Some` when the schedule procedure ran (rows 1–5 of the ladder).
    pub fn schedule_type(&self) -> Option<ScheduleType> {
        self.schedule_type
    }

    /// The algorithm's outcome, once it ran.
    pub fn take_outcome(&mut self) -> Option<Outcome> {
        self.outcome.take()
    }

    /// Act on `decision`, the ladder's for [`Attempt::binding`] or one asked for.
    pub fn start(&mut self, decision: Decision) -> Vec<Effect> {
        self.decided(decision);
        std::mem::take(&mut self.out)
    }

    /// A binding that does not decode (`error` says where): its `Scheduled=False` condition,
    /// once per generation, then a Warning; a newer object is left to its own watch event.
    pub fn malformed(&mut self, error: &str) -> Vec<Effect> {
        let message = format!(
            "failed to decode {}: {error}",
            self.binding.key().describe()
        );
        let condition = ScheduledCondition {
            status: false,
            reason: "SchedulerError",
            message,
        };
        let update = StatusUpdate {
            condition,
            scheduled_generation: None,
            affinity_name: None,
        };
        match status_patch(&self.binding.status, &update, &self.now) {
            Some(body) => self.wait(
                State::Malformed(update.condition.message),
                Patch::on(&self.binding, Target::Status, body),
            ),
            None => self.out.push(Effect::Done(Ok(()))),
        }
        std::mem::take(&mut self.out)
    }

    /// The answer to the request that ended the last batch.
    pub fn on(&mut self, answer: Answer) -> Vec<Effect> {
        match (std::mem::replace(&mut self.state, State::Idle), answer) {
            (State::Syncing, Answer::Object(Ok(_))) => self.out.push(Effect::Done(Ok(()))),
            (State::Syncing, Answer::Object(Err(e))) if e.is_conflict() => self.conflict(),
            (State::Syncing, Answer::Object(Err(e))) => self.out.push(failed(e.into())),
            (State::Scheduling { exclusive }, Answer::Outcome(o)) => self.planned(o, exclusive),
            (State::Writing(w), Answer::Object(r)) => self.result_answered(w, r),
            (State::Writing(mut w), Answer::Outcome(o)) => match o.result {
                Ok(CoreDecision::Scheduled(result)) => {
                    w.result = result;
                    self.write_result(w);
                }
                _ => self.results_written(*w),
            },
            (State::Status(s), Answer::Object(r)) => self.status_answered(s, r),
            (State::Rereading, Answer::Object(r)) => self.reread(r),
            // Told unless this replica's permit lapsed; a newer object (a conflict) is left
            // to its own watch event.
            (State::Malformed(message), Answer::Object(r)) => {
                if !matches!(&r, Err(e) if e.is_fenced()) {
                    self.out.push(Effect::Event(PlannedEvent::failed(message)));
                }
                self.out.push(match r {
                    Err(e) if !e.is_conflict() => failed(e.into()),
                    _ => Effect::Done(Ok(())),
                });
            }
            _ => self.out.push(failed(AttemptError::Other(
                "an answer not asked for".into(),
            ))),
        }
        std::mem::take(&mut self.out)
    }

    /// Wait in `state` for the answer to `request`.
    fn wait(&mut self, state: State, request: Effect) {
        self.state = state;
        self.out.push(request);
    }

    fn decided(&mut self, decision: Decision) {
        (self.schedule_type, self.outcome) = (None, None);
        match decision {
            Decision::Deleting => {
                let message = deleting_event_message(&self.binding);
                self.out.extend([
                    Effect::Event(PlannedEvent::failed(message)),
                    Effect::Done(Ok(())),
                ]);
            }
            Decision::NoPlacement => {
                let what = match self.binding.kind {
                    BindingKind::ResourceBinding => "resourceBinding",
                    BindingKind::ClusterResourceBinding => "clusterResourceBinding",
                };
                let message = format!(
                    "failed to get placement from {what}({})",
                    self.binding.key()
                );
                self.out.push(failed(AttemptError::Other(message)));
            }
            Decision::UpToDate {
                sync_generation: None,
            } => self.out.push(Effect::Done(Ok(()))),
            // Preconditioned like every write: a stale copy (a frozen replica waking up) must
            // not move the observed generation of a newer object.
            Decision::UpToDate {
                sync_generation: Some(generation),
            } => {
                let body = observed_generation_patch(generation);
                self.wait(
                    State::Syncing,
                    Patch::on(&self.binding, Target::Status, body),
                );
            }
            Decision::Schedule(schedule_type, trigger) => {
                self.schedule_type = Some(schedule_type);
                let exclusive = self.rules.reserving
                    && self.binding.kind == BindingKind::ResourceBinding
                    && self.binding.spec.is_workload();
                self.wait(
                    State::Scheduling { exclusive },
                    Effect::Schedule { trigger, exclusive },
                );
            }
        }
    }

    /// A write met a newer object: read it and decide again, while re-reads remain.
    fn conflict(&mut self) {
        match self.rules.rereads {
            0 => self.out.push(Effect::Done(Err(CycleError::Conflict))),
            _ => self.wait(State::Rereading, Effect::Reread),
        }
    }

    fn reread(&mut self, read: Result<Box<Binding>, ApiFailure>) {
        match read {
            Ok(fresh) if self.rereads < self.rules.rereads => {
                self.rereads += 1;
                self.binding = *fresh;
                let multi = self.rules.multiple_pod_templates;
                self.decided(decision(&self.binding, self.snapshot, multi));
            }
            Ok(_) => self.out.push(Effect::Done(Err(CycleError::Conflict))),
            Err(e) => self.out.push(Effect::Done(Err(CycleError::Reread(e)))),
        }
    }

    /// The algorithm's outcome: the plan's events, the reservation, the first result patch.
    fn planned(&mut self, outcome: Outcome, exclusive: bool) {
        let plan = plan(&self.binding, &outcome);
        self.outcome = Some(outcome);
        self.out
            .extend(plan.events.iter().cloned().map(Effect::Event));
        let placement = encode_placement(&self.binding.spec.placement.clone().unwrap_or_default());
        let Some(result) = plan.result.clone() else {
            self.out.extend(exclusive.then_some(Effect::Unlock));
            return self.close(&plan, Written::default());
        };
        let body = result_patch(&self.binding, &placement, &result);
        // Reserve what is about to be written; rolled back if the write is refused.
        let reserved = exclusive && body.is_some();
        self.out
            .extend(reserved.then(|| Effect::Reserve(result.clone())));
        self.out.extend(exclusive.then_some(Effect::Unlock));
        let w = Writing {
            plan,
            placement,
            result,
            written: Written::default(),
            passes: 0,
            bumps: false,
            reserved,
        };
        self.send_result(Box::new(w), body);
    }

    /// The result patch against the latest stored copy, if the result changes it.
    fn write_result(&mut self, w: Box<Writing>) {
        let base = w.written.stored.as_ref().unwrap_or(&self.binding);
        let body = result_patch(base, &w.placement, &w.result);
        self.send_result(w, body);
    }

    /// Send `body`, the result patch against the latest stored copy (`None`: it changes
    /// nothing).
    fn send_result(&mut self, mut w: Box<Writing>, body: Option<serde_json::Value>) {
        let Some(body) = body else {
            return self.results_written(*w);
        };
        w.bumps = body.get("spec").is_some();
        let base = w.written.stored.as_ref().unwrap_or(&self.binding);
        let patch = Patch::on(base, Target::Main, body);
        self.wait(State::Writing(w), patch);
    }

    fn result_answered(&mut self, mut w: Box<Writing>, answer: Result<Box<Binding>, ApiFailure>) {
        match answer {
            // A Duplicated or non-workload binding is scheduled again by the reference when
            // the watch event of its own `spec.clusters` write comes back, and the clusters
            // it holds then score higher (ClusterLocality), which can reorder them: run that
            // pass now, on the stored object against the same snapshot.
            Ok(stored) => {
                w.passes += 1;
                let echo = w.bumps && w.passes <= ECHO_PASSES;
                if !(echo && always_rescheduled(&self.binding.spec)) {
                    w.written.stored = Some(*stored);
                    return self.results_written(*w);
                }
                w.written.stored = Some((*stored).clone());
                self.wait(State::Writing(w), Effect::Echo(stored));
            }
            Err(e) if e.is_conflict() => {
                self.out.extend(w.reserved.then_some(Effect::Release));
                self.conflict();
            }
            // No verdict on the write, which may have landed (or, fenced, was not sent): no
            // failure status either (it could overwrite the status of a write that did land,
            // and tells nothing). The binding is retried as soon as the server answers; if
            // the patch landed, its marker makes the retry complete it. The reservation stays
            // meanwhile: the write may have landed.
            Err(e) if e.is_transient() => {
                self.out.extend(w.reserved.then_some(Effect::Keep));
                self.out.push(failed(e.into()));
            }
            Err(e) => {
                w.written.refused = Some(e);
                self.results_written(*w);
            }
        }
    }

    /// The result writes are over: settle the reservation, then the closing event and status.
    fn results_written(&mut self, mut w: Writing) {
        if w.reserved && w.written.stored.is_none() {
            self.out.push(Effect::Release);
        } else if w.reserved {
            self.out.push(Effect::Keep);
            // The echo pass wrote another result (the reference assumes each it writes).
            if w.plan.result.as_ref() != Some(&w.result) {
                self.out
                    .extend([Effect::Reserve(w.result.clone()), Effect::Keep]);
            }
        }
        w.written.result = Some(w.result);
        self.close(&w.plan, w.written);
    }

    fn close(&mut self, plan: &Plan, written: Written) {
        let closing = closing(&self.binding, plan, &written);
        self.out
            .extend(closing.event.iter().cloned().map(Effect::Event));
        let base = written.stored;
        self.write_status(Box::new(Status {
            closing,
            base,
            sent: 0,
            reading: false,
        }));
    }

    /// The status patch against the latest copy, if it changes anything.
    fn write_status(&mut self, mut s: Box<Status>) {
        let base = s.base.as_ref().unwrap_or(&self.binding);
        let Some(body) = status_patch(&base.status, &s.closing.status, &self.now) else {
            return self.out.push(finish(&s.closing));
        };
        let patch = Patch::on(base, Target::Status, body);
        (s.sent, s.reading) = (s.sent + 1, false);
        self.wait(State::Status(s), patch);
    }

    /// A conflicting status patch is computed again on a fresh read of the same generation,
    /// so a condition another controller wrote meanwhile (`FullyApplied`) is kept. A read of
    /// another generation ends in a conflict: the status was decided for this one, and
    /// written over a newer one it would mark a newer spec as scheduled, or move
    /// `schedulerObservedGeneration` back.
    fn status_answered(&mut self, mut s: Box<Status>, answer: Result<Box<Binding>, ApiFailure>) {
        let generation = s.base.as_ref().unwrap_or(&self.binding).generation();
        match (s.reading, answer) {
            (false, Ok(_)) => self.out.push(finish(&s.closing)),
            (false, Err(e)) if e.is_conflict() => {
                s.reading = true;
                self.wait(State::Status(s), Effect::Reread);
            }
            (true, Ok(fresh)) if fresh.generation() != generation => self.conflict(),
            (true, Ok(_)) if s.sent == STATUS_PATCH_ATTEMPTS => {
                let key = self.binding.key().describe();
                let message = format!("status of {key} kept changing during {} attempts", s.sent);
                self.out.push(failed(AttemptError::Other(message)));
            }
            (true, Ok(fresh)) => {
                s.base = Some(*fresh);
                self.write_status(s);
            }
            (_, Err(e)) => self.out.push(failed(e.into())),
        }
    }
}

/// The attempt's end once its status is written: its error, unless the queue is to treat it
/// as done.
fn finish(closing: &Closing) -> Effect {
    match &closing.error {
        Some(e) if !closing.swallow => failed(e.clone()),
        _ => Effect::Done(Ok(())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use component_base::api::FENCED_REASON;
    use pretty_assertions::assert_eq;
    use scheduler_core::ScheduleError;
    use serde_json::json;

    use crate::cycle::patch::{REASON_FAILED, REASON_SUCCEED};
    use crate::model::binding::APPLIED_PLACEMENT_ANNOTATION;
    use crate::model::decision::ScheduleType::ReconcileSchedule;

    const DIVIDED: &str = r#"{"clusterAffinity": {"clusterNames": ["m1", "m2"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}"#;
    const DUPLICATED: &str = r#"{"clusterAffinity": {"clusterNames": ["m1", "m2"]},
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}"#;

    /// A ResourceBinding at generation 4, resourceVersion 7, never scheduled.
    fn binding(placement: &str, replicas: i32) -> Binding {
        let placement: Value = serde_json::from_str(placement).unwrap();
        Binding::decode(
            BindingKind::ResourceBinding,
            &json!({"metadata": {"name": "b", "namespace": "ns", "generation": 4, "resourceVersion": "7"},
                    "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"},
                             "replicas": replicas, "placement": placement}}),
        )
        .unwrap()
    }

    /// `b` as the server stores it after our result patch: resourceVersion `rv`, the applied
    /// placement, `clusters`, and the generation bumped when they changed.
    fn stored(b: &Binding, rv: &str, clusters: &[TargetCluster]) -> Binding {
        let mut s = b.clone();
        s.metadata.resource_version = Some(rv.into());
        let placement = encode_placement(b.spec.placement.as_ref().unwrap());
        s.metadata.annotations =
            Some([(APPLIED_PLACEMENT_ANNOTATION.to_string(), placement)].into());
        if s.spec.clusters != clusters {
            s.metadata.generation = Some(b.generation() + 1);
            s.spec.clusters = clusters.to_vec();
        }
        s
    }

    fn clusters(names: &[&str]) -> Vec<TargetCluster> {
        names.iter().map(|n| TargetCluster::new(*n, 2)).collect()
    }

    fn scheduled(names: &[&str]) -> Answer {
        Answer::Outcome(Outcome {
            result: Ok(CoreDecision::Scheduled(clusters(names))),
            affinity_name: None,
            failed_terms: Vec::new(),
            trace: None,
        })
    }

    fn ok(b: Binding) -> Answer {
        Answer::Object(Ok(Box::new(b)))
    }

    fn failure(code: u16, reason: &str) -> ApiFailure {
        ApiFailure {
            code,
            reason: reason.into(),
            message: format!("{code} {reason}"),
        }
    }

    fn refused(code: u16, reason: &str) -> Answer {
        Answer::Object(Err(failure(code, reason)))
    }

    fn fenced() -> ApiFailure {
        failure(0, FENCED_REASON)
    }

    fn now() -> Time {
        Time("2026-07-01T10:00:00Z".parse().unwrap())
    }

    fn rules(reserving: bool, rereads: usize) -> Rules {
        Rules {
            multiple_pod_templates: false,
            reserving,
            rereads,
        }
    }

    fn schedule() -> Decision {
        Decision::Schedule(ReconcileSchedule, Trigger::PlacementChanged)
    }

    /// The only patch of `effects`, which must end with it.
    fn patch(effects: &[Effect]) -> &Patch {
        match effects.last() {
            Some(Effect::Patch(p)) => p,
            other => panic!("ends with {other:?}, not a patch"),
        }
    }

    fn done_with(e: ApiFailure) -> Vec<Effect> {
        vec![failed(AttemptError::Api(e))]
    }

    /// An attempt on `b` that has sent its result patch (for `written`).
    fn writing<'s>(snapshot: &'s Snapshot, rules: Rules, b: &Binding) -> Attempt<'s> {
        let mut a = Attempt::new(snapshot, rules, b.clone(), now());
        a.start(schedule());
        let effects = a.on(scheduled(&["m1"]));
        assert_eq!(patch(&effects).target, Target::Main);
        a
    }

    #[test]
    fn a_binding_being_deleted_is_told_and_not_written() {
        let snapshot = Snapshot::from_clusters([]);
        let mut a = Attempt::new(&snapshot, rules(true, 3), binding(DIVIDED, 2), now());
        assert_eq!(
            a.start(Decision::Deleting),
            vec![
                Effect::Event(PlannedEvent::failed(
                    "skip schedule deleting resourceBinding: ns/b".into()
                )),
                Effect::Done(Ok(())),
            ]
        );
        assert_eq!(a.schedule_type(), None);
        let mut a = Attempt::new(&snapshot, rules(true, 3), binding(DIVIDED, 2), now());
        assert_eq!(
            a.start(Decision::NoPlacement),
            vec![failed(AttemptError::Other(
                "failed to get placement from resourceBinding(ns/b)".into()
            ))]
        );
        assert_eq!(
            a.start(Decision::UpToDate {
                sync_generation: None
            }),
            vec![Effect::Done(Ok(()))]
        );
    }

    /// The observed-generation sync is preconditioned on the copy decided on; a conflict is
    /// decided again on a fresh read (here: the placement changed meanwhile), any other
    /// failure ends the attempt with it.
    #[test]
    fn the_observed_generation_sync_and_its_answers() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        let sync = |rereads| {
            let mut a = Attempt::new(&snapshot, rules(false, rereads), b.clone(), now());
            let effects = a.start(Decision::UpToDate {
                sync_generation: Some(4),
            });
            assert_eq!(
                effects,
                vec![Effect::Patch(Patch {
                    target: Target::Status,
                    body: json!({"status": {"schedulerObservedGeneration": 4}}),
                    precondition: Some("7".into()),
                    generation: 4,
                })]
            );
            a
        };
        assert_eq!(sync(3).on(ok(b.clone())), vec![Effect::Done(Ok(()))]);
        assert_eq!(
            sync(0).on(refused(409, "Conflict")),
            vec![Effect::Done(Err(CycleError::Conflict))]
        );
        let mut a = sync(3);
        assert_eq!(a.on(refused(409, "Conflict")), vec![Effect::Reread]);
        assert_eq!(
            a.on(ok(b.clone())),
            vec![Effect::Schedule {
                trigger: Trigger::PlacementChanged,
                exclusive: false
            }]
        );
        assert_eq!(a.schedule_type(), Some(ReconcileSchedule));
        assert_eq!(
            sync(3).on(refused(503, "ServiceUnavailable")),
            done_with(failure(503, "ServiceUnavailable"))
        );
        assert_eq!(
            sync(3).on(Answer::Object(Err(fenced()))),
            done_with(fenced())
        );
    }

    /// A result patch on the copy decided on, then the success event and the status patch
    /// on the object the server stored, which observes the generation the result produced.
    #[test]
    fn a_result_is_written_then_the_status_of_the_generation_it_produced() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        let mut a = Attempt::new(&snapshot, rules(false, 3), b.clone(), now());
        assert_eq!(
            a.start(schedule()),
            vec![Effect::Schedule {
                trigger: Trigger::PlacementChanged,
                exclusive: false
            }]
        );
        let effects = a.on(scheduled(&["m1"]));
        assert_eq!(effects.len(), 1);
        let result = patch(&effects);
        assert_eq!(
            (
                result.target,
                result.precondition.as_deref(),
                result.generation
            ),
            (Target::Main, Some("7"), 4)
        );
        assert_eq!(
            result.body["spec"],
            json!({"clusters": [{"name": "m1", "replicas": 2}]})
        );
        let effects = a.on(ok(stored(&b, "8", &clusters(&["m1"]))));
        assert_eq!(
            effects[0],
            Effect::Event(PlannedEvent {
                warning: false,
                reason: REASON_SUCCEED,
                message: "Binding has been scheduled successfully. Result: {m1:2}".into()
            })
        );
        let status = patch(&effects);
        assert_eq!(
            (status.target, status.precondition.as_deref()),
            (Target::Status, Some("8"))
        );
        assert_eq!(status.body["status"]["schedulerObservedGeneration"], 5);
        assert_eq!(a.on(ok(b.clone())), vec![Effect::Done(Ok(()))]);
        assert!(a.take_outcome().is_some());
    }

    /// Each answer to the result patch: a conflict reads the object again (or, without
    /// re-reads, ends the attempt), and a failed read ends it with the read's failure; no
    /// verdict (5xx, no answer, a lapsed permit) ends it
    /// with no status written; a refusal is told and written as the condition.
    #[test]
    fn each_answer_to_the_result_patch() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        assert_eq!(
            writing(&snapshot, rules(false, 0), &b).on(refused(409, "Conflict")),
            vec![Effect::Done(Err(CycleError::Conflict))]
        );
        let mut a = writing(&snapshot, rules(false, 3), &b);
        assert_eq!(a.on(refused(409, "Conflict")), vec![Effect::Reread]);
        let mut unavailable = writing(&snapshot, rules(false, 3), &b);
        unavailable.on(refused(409, "Conflict"));
        assert_eq!(
            unavailable.on(refused(503, "ServiceUnavailable")),
            vec![Effect::Done(Err(CycleError::Reread(failure(
                503,
                "ServiceUnavailable"
            ))))]
        );
        assert_eq!(
            a.on(refused(404, "NotFound")),
            vec![Effect::Done(Err(CycleError::Reread(failure(
                404, "NotFound"
            ))))]
        );
        for no_verdict in [failure(503, "ServiceUnavailable"), failure(0, ""), fenced()] {
            assert_eq!(
                writing(&snapshot, rules(false, 3), &b).on(Answer::Object(Err(no_verdict.clone()))),
                done_with(no_verdict)
            );
        }
        let effects = writing(&snapshot, rules(false, 3), &b).on(refused(403, "QuotaExceeded"));
        assert_eq!(
            effects[0],
            Effect::Event(PlannedEvent::failed("403 QuotaExceeded".into()))
        );
        let status = patch(&effects);
        assert_eq!(
            (
                status.precondition.as_deref(),
                &status.body["status"]["conditions"][0]["reason"]
            ),
            (Some("7"), &json!("QuotaExceeded"))
        );
    }

    /// A conflict is decided again on each fresh read while re-reads remain; the conflict of
    /// the last is read too (a binding deleted meanwhile is done), then ends the attempt.
    #[test]
    fn conflicts_are_decided_again_until_the_rereads_run_out() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        let mut a = writing(&snapshot, rules(false, 1), &b);
        assert_eq!(a.on(refused(409, "Conflict")), vec![Effect::Reread]);
        let fresh = stored(&b, "9", &[]);
        assert!(matches!(
            a.on(ok(fresh.clone()))[..],
            [Effect::Schedule { .. }]
        ));
        assert_eq!(a.binding(), &fresh);
        assert_eq!(
            patch(&a.on(scheduled(&["m1"]))).precondition.as_deref(),
            Some("9")
        );
        assert_eq!(a.on(refused(409, "Conflict")), vec![Effect::Reread]);
        assert_eq!(
            a.on(ok(fresh)),
            vec![Effect::Done(Err(CycleError::Conflict))]
        );
    }

    /// A conflicting status patch is computed again on a fresh read of the same generation,
    /// at most five times; a read of another generation is a conflict of the attempt; a
    /// failure to send or to read ends it.
    #[test]
    fn the_status_patch_is_recomputed_on_each_fresh_read_of_its_generation() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        let written = stored(&b, "8", &clusters(&["m1"]));
        let at_status = |rereads| {
            let mut a = writing(&snapshot, rules(false, rereads), &b);
            assert_eq!(patch(&a.on(ok(written.clone()))).target, Target::Status);
            a
        };
        let mut a = at_status(0);
        let mut fresh = written.clone();
        for sent in 1..=5 {
            assert_eq!(
                a.on(refused(409, "Conflict")),
                vec![Effect::Reread],
                "{sent}"
            );
            fresh.metadata.resource_version = Some(format!("fresh-{sent}"));
            fresh.status.conditions.push(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                    type_: format!("Other{sent}"),
                    status: "True".into(),
                    reason: "r".into(),
                    message: "m".into(),
                    last_transition_time: now(),
                    observed_generation: None,
                },
            );
            let effects = a.on(ok(fresh.clone()));
            if sent == 5 {
                assert_eq!(
                    effects,
                    vec![failed(AttemptError::Other(
                        "status of ResourceBinding(ns/b) kept changing during 5 attempts".into()
                    ))]
                );
                break;
            }
            let status = patch(&effects);
            let rv = format!("fresh-{sent}");
            assert_eq!(status.precondition.as_deref(), Some(rv.as_str()));
            // The other controller's conditions are kept, ours added.
            let conditions = status.body["status"]["conditions"].as_array().unwrap();
            assert_eq!(conditions.len(), sent + 1);
            assert_eq!(conditions[sent]["type"], "Scheduled");
        }
        let newer = stored(&written, "9", &clusters(&["m2"]));
        let mut a = at_status(0);
        a.on(refused(409, "Conflict"));
        assert_eq!(
            a.on(ok(newer.clone())),
            vec![Effect::Done(Err(CycleError::Conflict))]
        );
        let mut a = at_status(3);
        a.on(refused(409, "Conflict"));
        assert_eq!(a.on(ok(newer)), vec![Effect::Reread]);
        let mut a = at_status(3);
        a.on(refused(409, "Conflict"));
        assert_eq!(
            a.on(refused(503, "ServiceUnavailable")),
            done_with(failure(503, "ServiceUnavailable"))
        );
        assert_eq!(
            at_status(3).on(Answer::Object(Err(fenced()))),
            done_with(fenced())
        );
    }

    /// With an assumption cache, a workload is scheduled under its lock, reserves the result
    /// it is about to write and gives the lock back before writing; the reservation is kept
    /// when the write lands or may have, and rolled back when it is refused or conflicts.
    #[test]
    fn the_reservation_follows_the_result_write() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        let reserved = || {
            let mut a = Attempt::new(&snapshot, rules(true, 0), b.clone(), now());
            assert_eq!(
                a.start(schedule()),
                vec![Effect::Schedule {
                    trigger: Trigger::PlacementChanged,
                    exclusive: true
                }]
            );
            let effects = a.on(scheduled(&["m1"]));
            assert_eq!(
                effects[..2],
                [Effect::Reserve(clusters(&["m1"])), Effect::Unlock]
            );
            assert_eq!(patch(&effects).target, Target::Main);
            a
        };
        let landed = reserved().on(ok(stored(&b, "8", &clusters(&["m1"]))));
        assert_eq!(landed[0], Effect::Keep);
        assert_eq!(patch(&landed).target, Target::Status);
        assert_eq!(
            reserved().on(refused(503, "ServiceUnavailable")),
            vec![
                Effect::Keep,
                failed(AttemptError::Api(failure(503, "ServiceUnavailable")))
            ]
        );
        assert_eq!(
            reserved().on(refused(409, "Conflict")),
            vec![Effect::Release, Effect::Done(Err(CycleError::Conflict))]
        );
        let quota = reserved().on(refused(403, "QuotaExceeded"));
        assert_eq!(quota[0], Effect::Release);
        assert_eq!(patch(&quota).target, Target::Status);
        // A result already held: nothing to reserve, nor to write but the status.
        let held = stored(&b, "8", &clusters(&["m1"]));
        let mut a = Attempt::new(&snapshot, rules(true, 0), held, now());
        a.start(schedule());
        let effects = a.on(scheduled(&["m1"]));
        assert_eq!(effects[0], Effect::Unlock);
        assert_eq!(patch(&effects).target, Target::Status);
        // No result to write (too few replicas): nothing reserved, the lock given back.
        let mut a = Attempt::new(&snapshot, rules(true, 0), b.clone(), now());
        a.start(schedule());
        let effects = a.on(Answer::Outcome(Outcome {
            result: Err(ScheduleError::Unschedulable("0/1 clusters".into())),
            affinity_name: None,
            failed_terms: Vec::new(),
            trace: None,
        }));
        assert!(!effects.iter().any(|e| matches!(e, Effect::Reserve(_))));
        assert!(effects.contains(&Effect::Unlock), "{effects:?}");
        // Not a workload: no lock.
        let mut a = Attempt::new(&snapshot, rules(true, 0), binding(DIVIDED, 0), now());
        assert!(matches!(
            a.start(schedule())[..],
            [Effect::Schedule {
                exclusive: false,
                ..
            }]
        ));
    }

    /// A Duplicated result is run again on each object it stored, as the reference's echo
    /// pass, at most twice; a new order is written on the stored copy, and assumed too.
    #[test]
    fn the_echo_pass_rewrites_a_duplicated_result_at_most_twice() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DUPLICATED, 2);
        let mut a = Attempt::new(&snapshot, rules(true, 0), b.clone(), now());
        a.start(schedule());
        assert_eq!(
            a.on(scheduled(&["m1", "m2"]))[0],
            Effect::Reserve(clusters(&["m1", "m2"]))
        );
        let first = stored(&b, "8", &clusters(&["m1", "m2"]));
        assert_eq!(
            a.on(ok(first.clone())),
            vec![Effect::Echo(Box::new(first.clone()))]
        );
        let effects = a.on(scheduled(&["m2", "m1"]));
        let again = patch(&effects);
        assert_eq!(
            (again.precondition.as_deref(), again.generation),
            (Some("8"), 5)
        );
        let second = stored(&first, "9", &clusters(&["m2", "m1"]));
        assert_eq!(
            a.on(ok(second.clone())),
            vec![Effect::Echo(Box::new(second.clone()))]
        );
        let effects = a.on(scheduled(&["m1", "m2"]));
        assert_eq!(patch(&effects).precondition.as_deref(), Some("9"));
        let third = stored(&second, "10", &clusters(&["m1", "m2"]));
        // Two passes run: the third write is not echoed. The first result was the one
        // written last, so the reservation is kept as it is.
        let effects = a.on(ok(third));
        assert_eq!(effects[0], Effect::Keep);
        assert!(matches!(&effects[1], Effect::Event(e) if e.reason == REASON_SUCCEED));
        let status = patch(&effects);
        assert_eq!(status.body["status"]["schedulerObservedGeneration"], 7);
        // A pass that settles on another order than the first result's assumes that one.
        let mut a = Attempt::new(&snapshot, rules(true, 0), b.clone(), now());
        a.start(schedule());
        a.on(scheduled(&["m1", "m2"]));
        a.on(ok(first.clone()));
        a.on(scheduled(&["m2", "m1"]));
        a.on(ok(second.clone()));
        let effects = a.on(scheduled(&["m2", "m1"]));
        assert_eq!(
            effects[..3],
            [
                Effect::Keep,
                Effect::Reserve(clusters(&["m2", "m1"])),
                Effect::Keep
            ]
        );
        // A Divided result is not echoed.
        let mut a = writing(&snapshot, rules(false, 0), &binding(DIVIDED, 2));
        let effects = a.on(ok(stored(&binding(DIVIDED, 2), "8", &clusters(&["m1"]))));
        assert_eq!(patch(&effects).target, Target::Status);
    }

    /// A binding that does not decode gets its condition, then the Warning once the patch
    /// was answered (not when this replica's permit lapsed); a newer object is left to its
    /// own watch event, and a condition already written is not written again.
    #[test]
    fn a_malformed_binding_gets_its_condition_then_its_warning() {
        let snapshot = Snapshot::from_clusters([]);
        let b = binding(DIVIDED, 2);
        let message = "failed to decode ResourceBinding(ns/b): spec.x: bad";
        let warning = Effect::Event(PlannedEvent {
            warning: true,
            reason: REASON_FAILED,
            message: message.into(),
        });
        let attempt = || {
            let mut a = Attempt::new(&snapshot, rules(true, 3), b.clone(), now());
            let effects = a.malformed("spec.x: bad");
            let p = patch(&effects);
            assert_eq!(
                (p.target, p.precondition.as_deref()),
                (Target::Status, Some("7"))
            );
            let condition = &p.body["status"]["conditions"][0];
            assert_eq!(
                (&condition["reason"], &condition["message"]),
                (&json!("SchedulerError"), &json!(message))
            );
            a
        };
        assert_eq!(
            attempt().on(ok(b.clone())),
            vec![warning.clone(), Effect::Done(Ok(()))]
        );
        assert_eq!(
            attempt().on(refused(409, "Conflict")),
            vec![warning.clone(), Effect::Done(Ok(()))]
        );
        assert_eq!(
            attempt().on(refused(503, "ServiceUnavailable")),
            vec![
                warning,
                failed(AttemptError::Api(failure(503, "ServiceUnavailable")))
            ]
        );
        assert_eq!(
            attempt().on(Answer::Object(Err(fenced()))),
            done_with(fenced())
        );
        let mut told = b.clone();
        crate::cycle::patch::set_condition(
            &mut told.status.conditions,
            &ScheduledCondition {
                status: false,
                reason: "SchedulerError",
                message: message.into(),
            },
            &now(),
        );
        let mut a = Attempt::new(&snapshot, rules(true, 3), told, now());
        assert_eq!(a.malformed("spec.x: bad"), vec![Effect::Done(Ok(()))]);
    }

    /// A fit error clears the clusters and is swallowed once its status is written.
    #[test]
    fn a_fit_error_clears_the_result_and_is_done_once_written() {
        let snapshot = Snapshot::from_clusters([]);
        let mut b = binding(DIVIDED, 2);
        b.spec.clusters = clusters(&["m1"]);
        let mut a = Attempt::new(&snapshot, rules(false, 0), b.clone(), now());
        a.start(schedule());
        let fit = scheduler_core::FitError {
            num_all_clusters: 0,
            diagnosis: Default::default(),
        };
        let effects = a.on(Answer::Outcome(Outcome {
            result: Err(ScheduleError::Fit(fit)),
            affinity_name: None,
            failed_terms: Vec::new(),
            trace: None,
        }));
        assert_eq!(patch(&effects).body["spec"], json!({"clusters": null}));
        let effects = a.on(ok(stored(&b, "8", &[])));
        assert!(matches!(&effects[0], Effect::Event(e) if e.warning));
        assert_eq!(
            patch(&effects).body["status"]["conditions"][0]["reason"],
            "NoClusterFit"
        );
        assert_eq!(a.on(ok(b)), vec![Effect::Done(Ok(()))]);
    }
}
