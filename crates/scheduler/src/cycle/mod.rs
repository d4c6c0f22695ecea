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

//!
//! The attempt is a state machine ([`attempt`]): the decision and each answer in, the events,
//! writes, reads and reservations to make out, as data. [`Cycle::run`] drives it through a
//! short executor (`execute.rs`), the one place that sends anything and that checks the write
//! permit. Beside it: the API as the cycle sees it ([`sink`]), the writes as data ([`patch`],
//! [`events`]), the schedule procedure's plan ([`plan`]), the assumption cache of
//! `SchedulingOvercommitProtection` ([`assume`]) and the in-memory API server the cycle runs
//! against in tests, `simulate` and `explain` ([`memory`]).

pub mod assume;
pub mod attempt;
pub mod events;
mod execute;
pub mod memory;
pub mod patch;
pub mod plan;
pub mod sink;

use component_base::fence::Permit;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use scheduler_core::features::MULTIPLE_POD_TEMPLATES_SCHEDULING;
use scheduler_core::framework::WorkloadGroupIndex;
use scheduler_core::schedule::{Outcome, Scheduler};
use scheduler_core::snapshot::Snapshot;

use crate::cycle::assume::Assumptions;
use crate::cycle::attempt::{Attempt, Rules};
use crate::cycle::sink::{EventSink, Writer};
use crate::model::binding::Binding;
use crate::model::condition::{ApiFailure, AttemptError};
use crate::model::decision::{Decision, ScheduleType};
use crate::store::{Malformed, ResultHook};

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
    /// The algorithm's outcome with its trace, when [`Cycle::want_trace`] asked for it and
    /// the algorithm ran.
    pub outcome: Option<Outcome>,
}

/// The collaborators of a cycle, made by [`Cycle::new`] (the daemon's workers, and the
/// read-only runs of [`crate::explain::ReadOnly`]).
pub struct Cycle<'a> {
    pub(crate) scheduler: &'a Scheduler,
    pub(crate) writer: &'a dyn Writer,
    pub(crate) events: &'a dyn EventSink,
    /// Other bindings, for the workload (anti-)affinity plugins (gate `WorkloadAffinity`).
    pub(crate) workload_index: Option<&'a dyn WorkloadGroupIndex>,
    /// The daemon's caches, told about each result patch (see [`ResultHook`]).
    pub(crate) after_write: Option<&'a dyn ResultHook>,
    /// The assumption cache (gate `SchedulingOvercommitProtection`; `None` with it off).
    pub(crate) assumptions: Option<&'a Assumptions>,
    /// Keep the algorithm's outcome and trace in the report (`simulate`, `explain`).
    pub(crate) want_trace: bool,
    /// The leadership term the attempt runs in (the daemon's); each patch is sent only while
    /// it holds. `None`: never fenced.
    pub(crate) permit: Option<&'a Permit>,
    /// Decisions made again on a fresh read after a conflict ([`Rules::rereads`]).
    pub(crate) rereads: usize,
}

/// What a cycle reads and tells besides the binding, the snapshot, its writer and its event
/// sink: the parts the daemon's gates add, and whether to keep the trace.
#[derive(Clone, Copy, Default)]
pub struct Parts<'a> {
    /// The other bindings, for the workload (anti-)affinity filters; used with the
    /// `WorkloadAffinity` gate.
    pub workload_index: Option<&'a dyn WorkloadGroupIndex>,
    /// The after-write hook of the daemon's caches; a read-only run has no caches of its own
    /// to keep and passes none.
    pub after_write: Option<&'a dyn ResultHook>,
    /// The assumption cache; used with the `SchedulingOvercommitProtection` gate.
    pub assumptions: Option<&'a Assumptions>,
    /// Keep the algorithm's outcome and trace in the report.
    pub want_trace: bool,
    /// The daemon's leadership term, which each write must still hold.
    pub permit: Option<&'a Permit>,
    /// Decisions made again on a fresh read after a conflict (the daemon's workers).
    pub rereads: usize,
}

impl<'a> Cycle<'a> {
    /// The one way to make a cycle (its unit tests aside). The gates of `scheduler` decide,
    /// here and for every caller, which of `parts` it uses: the workload index with
    /// `WorkloadAffinity`, the assumption cache with `SchedulingOvercommitProtection` (a part
    /// given with its gate off is left out, as the daemon has none then).
    pub fn new(
        scheduler: &'a Scheduler,
        writer: &'a dyn Writer,
        events: &'a dyn EventSink,
        parts: Parts<'a>,
    ) -> Self {
        let gates = &scheduler.config().gates;
        Cycle {
            scheduler,
            writer,
            events,
            workload_index: parts.workload_index.filter(|_| gates.workload_affinity()),
            after_write: parts.after_write,
            assumptions: parts
                .assumptions
                .filter(|_| gates.scheduling_overcommit_protection()),
            want_trace: parts.want_trace,
            permit: parts.permit,
            rereads: parts.rereads,
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
        let mut attempt = Attempt::new(snapshot, self.rules(), binding.clone(), now);
        let effects = attempt.start(decision);
        self.execute(attempt, effects, snapshot).await
    }

    /// Tell a binding that does not decode so ([`Attempt::malformed`]).
    pub async fn run_malformed(
        &self,
        m: &Malformed,
        snapshot: &Snapshot,
        now: Time,
    ) -> CycleReport {
        let mut attempt = Attempt::new(snapshot, self.rules(), m.binding.clone(), now);
        let effects = attempt.malformed(&m.error);
        self.execute(attempt, effects, snapshot).await
    }

    fn rules(&self) -> Rules {
        Rules {
            multiple_pod_templates: self
                .scheduler
                .config()
                .gates
                .enabled(MULTIPLE_POD_TEMPLATES_SCHEDULING),
            reserving: self.assumptions.is_some(),
            rereads: self.rereads,
        }
    }
}

#[cfg(test)]
mod tests;
