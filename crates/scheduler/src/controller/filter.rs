//! The event filter: which binding and cluster changes queue which bindings (client-go's
//! filtering handler and the reference's cluster reconcile worker).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::Cluster;
use serde_json::Value;

use crate::metrics::IncomingEvent;
use crate::model::binding::{Binding, passes_filter};
use crate::model::decision::affinity_index;

/// What the event filter and the queue need, read leniently from raw JSON so that malformed
/// bindings are filtered exactly like good ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub passes: bool,
    /// `spec.schedulerName` names this scheduler (whatever the other filter rules say).
    pub owned: bool,
    pub generation: i64,
    /// `status.schedulerObservedGeneration`.
    pub observed_generation: i64,
    pub priority: i32,
}

/// Summarise a raw binding for the event filter.
pub fn summarize(raw: &Value, scheduler_name: &str) -> Summary {
    let meta: ObjectMeta = raw
        .get("metadata")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default();
    let spec = raw.get("spec");
    let binding_scheduler = spec
        .and_then(|s| s.get("schedulerName"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(crate::config::options::DEFAULT_SCHEDULER_NAME);
    let suspended = spec
        .and_then(|s| s.pointer("/suspension/scheduling"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Summary {
        passes: passes_filter(&meta, binding_scheduler, suspended, scheduler_name),
        owned: binding_scheduler == scheduler_name,
        generation: meta.generation.unwrap_or_default(),
        observed_generation: raw
            .pointer("/status/schedulerObservedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
        priority: spec
            .and_then(|s| s.pointer("/schedulePriority/priority"))
            .and_then(Value::as_i64)
            .unwrap_or_default() as i32,
    }
}

/// client-go's filtering handler on an update: which handler runs.
///
/// Our addition: an update that moves `schedulerObservedGeneration` back under an unchanged
/// generation is queued too. No scheduler writing its own decision does that; a stale writer
/// does (a replica that was frozen past its lease, an older version, anything writing a status
/// decided on an old copy), and the reference would leave the binding so, marked scheduled
/// for a generation it is not at, until its spec changes again. The ladder then completes it
/// (schedules it again, or syncs the observed generation).
pub fn binding_change(old: Option<&Summary>, new: Option<&Summary>) -> Option<IncomingEvent> {
    match (old, new) {
        (None, Some(n)) if n.passes => Some(IncomingEvent::BindingAdd),
        (Some(o), Some(n)) => match (o.passes, n.passes) {
            (true, true) if o.generation != n.generation => Some(IncomingEvent::BindingUpdate),
            (true, true) if n.observed_generation < o.observed_generation => {
                Some(IncomingEvent::BindingUpdate)
            }
            (false, true) => Some(IncomingEvent::BindingAdd),
            _ => None,
        },
        _ => None,
    }
}

/// Cluster update → which cluster objects fan out to bindings.
pub fn cluster_update_fanout(old: &Cluster, new: &Cluster) -> Vec<Cluster> {
    if new.metadata.deletion_timestamp.is_some() && old.metadata.deletion_timestamp.is_none() {
        return vec![new.clone()];
    }
    let labels = |c: &Cluster| c.metadata.labels.clone().unwrap_or_default();
    if labels(old) != labels(new) || old.metadata.generation != new.metadata.generation {
        return vec![old.clone(), new.clone()];
    }
    Vec::new()
}

/// Whether a change of `cluster` requeues `binding` (the reconcile worker's rule).
pub fn requeue_on_cluster_change(
    binding: &Binding,
    cluster: &Cluster,
    scheduler_name: &str,
) -> bool {
    let Some(placement) = binding.spec.placement.as_ref() else {
        return false;
    };
    if binding.scheduler_name() != scheduler_name || binding.spec.scheduling_suspended() {
        return false;
    }
    let affinity = match &placement.cluster_affinities {
        Some(terms) => {
            if binding.status.scheduler_observed_generation != binding.generation() {
                return true;
            }
            let idx = affinity_index(terms, &binding.status.scheduler_observed_affinity_name);
            terms.get(idx).map(|t| &t.affinity)
        }
        None => placement.cluster_affinity.as_ref(),
    };
    affinity.is_none_or(|a| scheduler_core::selector::cluster_matches(cluster, a))
}
