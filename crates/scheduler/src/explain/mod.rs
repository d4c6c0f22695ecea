//! What the daemon would decide for a binding, and why: the daemon's cycle run against an
//! in-memory copy ([`crate::cycle::memory`]), kept with its decision, outcome, patches and events.
//! `simulate`, `karmada-scheduler explain` and the daemon's `/debug/explain` endpoint all go
//! through [`ReadOnly`], so they report exactly what the daemon does; the endpoint itself is
//! [`endpoint`], the text the subcommands print [`render`].

pub mod budget;
pub mod endpoint;
pub mod guard;
pub mod render;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::work::TargetCluster;
use scheduler_core::snapshot::Snapshot;
use serde_json::{Value, json};

use scheduler_core::framework::WorkloadGroupIndex;
use scheduler_core::schedule::Scheduler;

use crate::cycle::{Cycle, CycleError, CycleReport, Parts};
use crate::model::binding::Binding;
use crate::model::condition::SCHEDULED;
use crate::model::decision::{Decision, ScheduleType, Trigger};
use crate::store::assume::Assumptions;
use component_base::events::PendingEvent;

use crate::cycle::memory::MemoryStore;
use crate::cycle::sink::Target;
use component_base::events::MemoryEvents;

/// One binding explained.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The daemon's decision ladder.
    pub daemon: Decision,
    /// The attempt that was made (the daemon's, or one asked for: [`attempt`]).
    pub report: CycleReport,
    /// The binding as the attempt left it.
    pub stored: Option<Binding>,
    /// The patches the attempt sent, in order.
    pub patches: Vec<(Target, Value)>,
    /// The events it recorded.
    pub events: Vec<PendingEvent>,
    /// Why the daemon's event filter drops the binding (it is never queued, so the ladder is
    /// never asked), if it does: [`filtered_out`].
    pub filtered: Option<String>,
}

/// The class of an attempt's result, as `simulate` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `Scheduled`, `Unschedulable` or `Error`.
    pub result: &'static str,
    /// The placement, sorted by cluster name; empty unless scheduled.
    pub clusters: Vec<TargetCluster>,
    /// The `Scheduled` condition's message (or the error when none was written).
    pub message: String,
}

/// The attempt to make: the daemon's decision when it schedules or refuses the binding,
/// otherwise one anyway (the daemon would not act, and the explanation says so).
pub fn attempt(daemon: &Decision) -> Decision {
    match daemon {
        Decision::Schedule(..) | Decision::NoPlacement => daemon.clone(),
        Decision::Deleting | Decision::UpToDate { .. } => {
            Decision::Schedule(ScheduleType::ReconcileSchedule, Trigger::Requested)
        }
    }
}

/// Why the daemon named `scheduler_name` never queues `binding`: the event filter
/// ([`Binding::passes_filter`]) in words; `None` when it passes.
pub fn filtered_out(binding: &Binding, scheduler_name: &str) -> Option<String> {
    if binding.passes_filter(scheduler_name) {
        return None;
    }
    Some(if binding.scheduler_name() != scheduler_name {
        format!(
            "spec.schedulerName is {:?}, not {scheduler_name:?}",
            binding.scheduler_name()
        )
    } else if binding.spec.scheduling_suspended() {
        "its scheduling is suspended (spec.suspension.scheduling)".to_string()
    } else {
        format!(
            "it carries none of the labels {}",
            crate::model::binding::FILTER_LABELS.join(", ")
        )
    })
}

/// The daemon's answer, in words: its event filter's when that drops the binding, otherwise
/// the decision ladder's.
pub fn describe(d: &Decision, filtered: Option<&str>) -> String {
    match filtered {
        Some(why) => format!(
            "the daemon would not act: its event filter drops it, {why} (the attempt shown is not the daemon's)"
        ),
        None => describe_decision(d),
    }
}

/// The decision ladder's answer, in words.
pub fn describe_decision(d: &Decision) -> String {
    let why = |t: &Trigger| match t {
        Trigger::PlacementChanged => "its placement changed",
        Trigger::ReplicasChanged => "its replicas changed",
        Trigger::RescheduleTriggered => "a reschedule was requested",
        Trigger::Duplicated => "Duplicated placements are scheduled on every change",
        Trigger::TerminatingTargetCluster => "a target cluster is being deleted",
        Trigger::UnfinishedWrite => "an earlier write of this scheduler was left unfinished",
        Trigger::Requested => "it was asked to",
    };
    match d {
        Decision::Schedule(_, t) => format!("the daemon schedules it: {}", why(t)),
        Decision::UpToDate {
            sync_generation: None,
        } => "the daemon would not act: its result is up to date (the attempt shown is not the daemon's)"
            .into(),
        Decision::UpToDate {
            sync_generation: Some(g),
        } => format!(
            "the daemon would only record generation {g} as observed (the attempt shown is not the daemon's)"
        ),
        Decision::Deleting => {
            "the daemon would not schedule it: it is being deleted (the attempt shown is not the daemon's)"
                .into()
        }
        Decision::NoPlacement => "the daemon refuses it: it has no placement".into(),
    }
}

/// A read-only run of the daemon's cycle: it writes to an in-memory API server ([`store`]
/// here), records its events in memory, and keeps the trace. `simulate`, `karmada-scheduler
/// explain` and the daemon's `/debug/explain` make their cycles here, each through
/// [`Cycle::new`] with the same parts as the daemon's (each used as the daemon's gates say):
///
/// - the workload group index: the bindings of [`store`] (`simulate`'s input, the control
///   plane's bindings for `explain`), or the daemon's own index ([`ReadOnly::with_daemon`]);
/// - the assumption cache: one for the whole run (`simulate`'s bindings are assumed for the
///   ones after them, as a burst in the daemon), empty to start with, or a copy of the
///   daemon's;
/// - no own writes: a read-only run has no watch whose echoes they would hold back (the echo
///   pass runs all the same).
///
/// [`store`]: ReadOnly::store
pub struct ReadOnly<'a> {
    scheduler: &'a Scheduler,
    /// The daemon's `--scheduler-name`, for its event filter.
    scheduler_name: &'a str,
    /// The bindings of the run, as written by its cycles.
    pub store: MemoryStore,
    events: MemoryEvents,
    assumptions: Assumptions,
    /// The daemon's group index, when the run is the daemon's ([`ReadOnly::with_daemon`]).
    daemon_index: Option<&'a dyn WorkloadGroupIndex>,
    want_trace: bool,
}

impl<'a> ReadOnly<'a> {
    /// A run of `scheduler` (built from the daemon's flags by [`crate::config::build`]) for
    /// the daemon named `scheduler_name`; `want_trace` keeps each attempt's trace.
    pub fn new(scheduler: &'a Scheduler, scheduler_name: &'a str, want_trace: bool) -> Self {
        Self {
            scheduler,
            scheduler_name,
            store: MemoryStore::default(),
            events: MemoryEvents::default(),
            assumptions: Assumptions::default(),
            daemon_index: None,
            want_trace,
        }
    }

    /// The run beside a running daemon: its group index, and a copy of its assumptions.
    pub fn with_daemon(
        mut self,
        index: Option<&'a dyn WorkloadGroupIndex>,
        assumptions: Option<&Assumptions>,
    ) -> Self {
        self.daemon_index = index;
        if let Some(a) = assumptions {
            self.assumptions = a.copy();
        }
        self
    }

    /// Whether the workload group filters read the bindings of [`ReadOnly::store`]: with the
    /// `WorkloadAffinity` gate, unless the daemon's own index is used. The bindings of a
    /// group's other members then belong in the store.
    pub fn reads_peers(&self) -> bool {
        self.daemon_index.is_none() && self.scheduler.config().gates.workload_affinity()
    }

    /// The cycle of this run.
    pub fn cycle(&self) -> Cycle<'_> {
        let index: &dyn WorkloadGroupIndex = match self.daemon_index {
            Some(i) => i,
            None => &self.store,
        };
        Cycle::new(
            self.scheduler,
            &self.store,
            &self.events,
            Parts {
                workload_index: Some(index),
                after_write: None,
                assumptions: Some(&self.assumptions),
                want_trace: self.want_trace,
                ..Parts::default()
            },
        )
    }

    /// Run the cycle on `binding`, which [`ReadOnly::store`] holds, as [`attempt`] asks, and
    /// collect what it did. A binding the daemon's event filter drops is attempted all the
    /// same (as if the ladder were asked), and the explanation says the daemon would not act.
    pub async fn explain(&self, binding: &Binding, snapshot: &Snapshot, now: Time) -> Explanation {
        let cycle = self.cycle();
        let key = binding.key();
        let daemon = cycle.decision(binding, snapshot);
        let patches_before = self.store.patches_of(&key).len();
        let events_before = self
            .events
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        let report = cycle
            .run_decided(binding, snapshot, now, attempt(&daemon))
            .await;
        Explanation {
            daemon,
            report,
            stored: self.store.binding(&key),
            patches: self.store.patches_of(&key).split_off(patches_before),
            events: self.events.0.lock().unwrap_or_else(|p| p.into_inner())[events_before..]
                .to_vec(),
            filtered: filtered_out(binding, self.scheduler_name),
        }
    }
}

impl Explanation {
    /// Whether the daemon would act on the binding at all.
    pub fn daemon_acts(&self) -> bool {
        self.filtered.is_none() && matches!(self.daemon, Decision::Schedule(..))
    }

    /// The daemon's answer in words ([`describe`]).
    pub fn decision(&self) -> String {
        describe(&self.daemon, self.filtered.as_deref())
    }

    /// The result from what the attempt wrote: the `Scheduled` condition's reason gives the
    /// class and its message the message; the cycle's error when it wrote no condition.
    pub fn verdict(&self) -> Verdict {
        let stored = self.stored.as_ref();
        let condition =
            stored.and_then(|s| s.status.conditions.iter().find(|c| c.type_ == SCHEDULED));
        let (result, clusters, message) = match (condition, &self.report.result) {
            (Some(c), _) if c.reason == "Success" => {
                let mut clusters = stored.map(|s| s.spec.clusters.clone()).unwrap_or_default();
                clusters.sort_by(|a, b| a.name.cmp(&b.name));
                ("Scheduled", clusters, c.message.clone())
            }
            (Some(c), _) if matches!(c.reason.as_str(), "NoClusterFit" | "Unschedulable") => {
                ("Unschedulable", Vec::new(), c.message.clone())
            }
            (Some(c), _) => ("Error", Vec::new(), c.message.clone()),
            (None, Err(CycleError::Failed(e))) => ("Error", Vec::new(), e.to_string()),
            (None, Err(CycleError::Reread(e))) => ("Error", Vec::new(), e.to_string()),
            (None, Err(CycleError::Conflict)) => ("Error", Vec::new(), "conflict".to_string()),
            (None, Ok(())) => ("Error", Vec::new(), String::new()),
        };
        Verdict {
            result,
            clusters,
            message,
        }
    }

    /// The explanation as JSON (`explain -o json`, `/debug/explain`).
    pub fn to_json(&self, binding: &Binding) -> Value {
        let v = self.verdict();
        let patches: Vec<Value> = self
            .patches
            .iter()
            .map(|(target, patch)| {
                json!({"target": if *target == Target::Main { "main" } else { "status" }, "patch": patch})
            })
            .collect();
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|e| {
                json!({
                    "involvedObject": {"kind": e.involved.kind, "name": e.involved.name,
                                       "namespace": e.involved.namespace},
                    "type": if e.warning { "Warning" } else { "Normal" },
                    "reason": e.reason,
                    "message": e.message,
                })
            })
            .collect();
        json!({
            "kind": binding.kind.kind(),
            "namespace": binding.namespace(),
            "name": binding.name(),
            "decision": self.decision(),
            "daemonActs": self.daemon_acts(),
            "result": v.result,
            "clusters": v.clusters.iter().map(|c| json!({"name": c.name.to_string(), "replicas": c.replicas})).collect::<Vec<_>>(),
            "message": v.message,
            "patches": patches,
            "events": events,
            "trace": self.report.outcome.as_ref().and_then(|o| o.trace.as_ref()),
        })
    }
}
