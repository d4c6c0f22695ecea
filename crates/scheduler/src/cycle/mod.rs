//! One scheduling attempt for one binding: decide, run the algorithm, write.
//!
//! The attempt is a state machine ([`attempt`]): the decision and each answer in, the events,
//! writes, reads and reservations to make out, as data. [`Cycle::run`] drives it through a
//! short executor (`execute.rs`), the one place that sends anything (through a [`BindingApi`]
//! and an [`EventSink`]: in-memory fakes in tests, in the daemon the kube client lent by its
//! write gate under the attempt's permit). Its writes improve on the reference's three blind patches: the result
//! patch carries a `metadata.resourceVersion` precondition, so a result computed from a stale
//! copy is refused (409) instead of overwriting a newer `spec.clusters` (e.g. a graceful
//! eviction), and the attempt is decided again on a fresh read; one status patch carries the
//! `Scheduled` condition, the observed generation, `lastScheduledTime` and the observed
//! affinity name, also preconditioned and recomputed on a fresh read when it conflicts, so a
//! condition another controller wrote meanwhile (`FullyApplied`) is never clobbered.
//!
//! Beside it: the API as the cycle sees it ([`sink`]), the writes as data ([`patch`],
//! [`events`]), the schedule procedure's plan ([`plan`]), the assumption cache of
//! `SchedulingOvercommitProtection` ([`crate::store::assume`]) and the in-memory API server the cycle runs
//! against in tests, `simulate` and `explain` ([`memory`]).

pub mod attempt;
pub mod events;
mod execute;
pub mod memory;
pub mod patch;
pub mod plan;
pub mod sink;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use scheduler_core::features::MULTIPLE_POD_TEMPLATES_SCHEDULING;
use scheduler_core::framework::WorkloadGroupIndex;
use scheduler_core::schedule::{Outcome, Scheduler};
use scheduler_core::snapshot::Snapshot;

use crate::cycle::attempt::{Attempt, Rules};
use crate::cycle::sink::{BindingApi, EventSink, ResultHook};
use crate::model::binding::Binding;
use crate::model::condition::{ApiFailure, AttemptError};
use crate::model::decision::{Decision, ScheduleType};
use crate::store::Malformed;
use crate::store::assume::Assumptions;

/// Why a cycle did not finish normally.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CycleError {
    /// The result patch hit a newer object: re-read and run again.
    Conflict,
    /// The attempt failed; the queue retries it (with backoff, or parked when unschedulable).
    Failed(AttemptError),
    /// The read after a conflict failed (404: the binding is gone).
    Reread(ApiFailure),
}

/// What a cycle did, for the queue and the metrics.
#[derive(Clone, Debug)]
pub struct CycleReport {
    /// `Some` when the schedule procedure ran (rows 1–5 of the ladder).
    pub schedule_type: Option<ScheduleType>,
    pub result: Result<(), CycleError>,
    /// The algorithm's outcome with its trace, when [`Parts::want_trace`] asked for it and
    /// the algorithm ran.
    pub outcome: Option<Outcome>,
}

/// The collaborators of a cycle, made by [`Cycle::new`] (the daemon's workers, and the
/// read-only runs of [`crate::explain::ReadOnly`]).
pub struct Cycle<'a> {
    pub(crate) scheduler: &'a Scheduler,
    pub(crate) api: &'a dyn BindingApi,
    pub(crate) events: &'a dyn EventSink,
    /// The parts it uses, as the gates leave them.
    pub(crate) parts: Parts<'a>,
}

/// What a cycle reads and tells besides the binding, the snapshot, its API and its event
/// sink: the parts the daemon's gates add, and how its attempts run.
#[derive(Clone, Copy, Default)]
pub struct Parts<'a> {
    /// The other bindings, for the workload (anti-)affinity filters; used with the
    /// `WorkloadAffinity` gate.
    pub workload_index: Option<&'a dyn WorkloadGroupIndex>,
    /// The daemon's caches, told about each result patch (see [`ResultHook`]); a read-only
    /// run has no caches of its own to keep and passes none.
    pub after_write: Option<&'a dyn ResultHook>,
    /// The assumption cache; used with the `SchedulingOvercommitProtection` gate.
    pub assumptions: Option<&'a Assumptions>,
    /// Keep the algorithm's outcome and trace in the report (`simulate`, `explain`).
    pub want_trace: bool,
    /// Decisions made again on a fresh read after a conflict ([`Rules::rereads`]).
    pub rereads: usize,
}

impl<'a> Cycle<'a> {
    /// The one way to make a cycle (its unit tests aside). The gates of `scheduler` decide,
    /// here and for every caller, which of `parts` it uses: the workload index with
    /// `WorkloadAffinity`, the assumption cache with `SchedulingOvercommitProtection` (a part
    /// given with its gate off is left out, as the daemon has none then).
    pub fn new(
        scheduler: &'a Scheduler,
        api: &'a dyn BindingApi,
        events: &'a dyn EventSink,
        parts: Parts<'a>,
    ) -> Self {
        let gates = &scheduler.config().gates;
        let parts = Parts {
            workload_index: parts.workload_index.filter(|_| gates.workload_affinity()),
            assumptions: (parts.assumptions).filter(|_| gates.scheduling_overcommit_protection()),
            ..parts
        };
        Cycle {
            scheduler,
            api,
            events,
            parts,
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
        let multi = self.rules().multiple_pod_templates;
        attempt::decision(binding, snapshot, multi)
    }

    /// [`Cycle::run`] with the decision made already (`simulate` and `explain` turn a
    /// decision not to act into
    /// [`Trigger::Requested`](crate::model::decision::Trigger::Requested)).
    pub async fn run_decided(
        &self,
        binding: &Binding,
        snapshot: &Snapshot,
        now: Time,
        decision: Decision,
    ) -> CycleReport {
        let attempt = Attempt::new(snapshot, self.rules(), binding.clone(), now);
        self.execute(attempt, |a| a.start(decision), snapshot).await
    }

    /// Tell a binding that does not decode so ([`Attempt::malformed`]).
    pub async fn run_malformed(
        &self,
        m: &Malformed,
        snapshot: &Snapshot,
        now: Time,
    ) -> CycleReport {
        let attempt = Attempt::new(snapshot, self.rules(), m.binding.clone(), now);
        self.execute(attempt, |a| a.malformed(&m.error), snapshot)
            .await
    }

    fn rules(&self) -> Rules {
        let gates = &self.scheduler.config().gates;
        Rules {
            multiple_pod_templates: gates.enabled(MULTIPLE_POD_TEMPLATES_SCHEDULING),
            reserving: self.parts.assumptions.is_some(),
            rereads: self.parts.rereads,
        }
    }
}

#[cfg(test)]
mod tests;
