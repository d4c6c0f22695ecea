//! The event filter: which binding and cluster changes queue which bindings (client-go's
//! filtering handler and the reference's cluster reconcile worker).

use karmada_api::Cluster;

use crate::metrics::IncomingEvent;
use crate::model::binding::{Binding, Summary};
use crate::model::decision::affinity_index;

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
