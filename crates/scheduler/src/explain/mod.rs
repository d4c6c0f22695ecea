//! What the daemon would decide for a binding, and why: the daemon's cycle run against an
//! in-memory copy ([`crate::cycle::memory`]), kept with its decision, outcome, patches and events.
//! `simulate`, `karmada-scheduler explain` and the daemon's `/debug/explain` endpoint all go
//! through [`explain`], so they report exactly what the daemon does; the endpoint itself is
//! [`endpoint`].

pub mod endpoint;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::work::TargetCluster;
use scheduler_core::snapshot::Snapshot;
use serde_json::{Value, json};

use crate::cycle::{Cycle, CycleError, CycleReport};
use crate::model::binding::Binding;
use crate::model::condition::SCHEDULED;
use crate::model::decision::{Decision, ScheduleType, Trigger};
use component_base::events::PendingEvent;

use crate::cycle::events::MemoryRecorder;
use crate::cycle::memory::MemoryStore;
use crate::cycle::sink::Target;

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

/// Run `cycle` (whose writer is `store` and whose event sink is `events`) on `binding`, which
/// `store` holds, as [`attempt`] asks, and collect what it did. `scheduler_name` is the
/// daemon's `--scheduler-name`, for its event filter: a binding the filter drops is attempted
/// all the same (as if the ladder were asked), and the explanation says the daemon would not
/// act.
pub async fn explain(
    cycle: &Cycle<'_>,
    store: &MemoryStore,
    events: &MemoryRecorder,
    binding: &Binding,
    snapshot: &Snapshot,
    now: Time,
    scheduler_name: &str,
) -> Explanation {
    let key = binding.key();
    let daemon = cycle.decision(binding, snapshot);
    let patches_before = store.patches_of(&key).len();
    let events_before = events.0.lock().unwrap_or_else(|p| p.into_inner()).len();
    let report = cycle
        .run_decided(binding, snapshot, now, attempt(&daemon))
        .await;
    Explanation {
        daemon,
        report,
        stored: store.binding(&key),
        patches: store.patches_of(&key).split_off(patches_before),
        events: events.0.lock().unwrap_or_else(|p| p.into_inner())[events_before..].to_vec(),
        filtered: filtered_out(binding, scheduler_name),
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
