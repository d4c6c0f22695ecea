//! Static weighting (spec-algorithm §11.5): replicas split by configured weights.

use karmada_api::policy::{ClusterAffinity, ClusterPreferences, StaticClusterWeight};
use karmada_api::work::{ResourceBindingSpec, TargetCluster};

use super::webster::dispense_by_weight;
use crate::detail::ClusterDetail;
use crate::selector::cluster_matches;

/// The weight list upstream substitutes when `weightPreference` is absent: weight 1 for
/// every candidate, by name.
pub fn default_weight_preference(cands: &[ClusterDetail<'_>]) -> ClusterPreferences {
    ClusterPreferences {
        static_weight_list: cands
            .iter()
            .map(|c| StaticClusterWeight {
                target_cluster: ClusterAffinity {
                    cluster_names: vec![c.name.to_string()],
                    ..Default::default()
                },
                weight: 1,
            })
            .collect(),
        dynamic_weight: None,
    }
}

/// Each candidate's weight: the largest weight among the rules that select it. Candidates
/// without a positive weight are left out (no entry, not "0 replicas"); when no candidate
/// has one, every candidate gets weight 1.
pub fn static_weights(
    cands: &[ClusterDetail<'_>],
    rules: &[StaticClusterWeight],
) -> Vec<(String, i64)> {
    let mut list: Vec<(String, i64)> = Vec::new();
    for c in cands {
        let weight = rules
            .iter()
            .filter(|r| cluster_matches(c.cluster, &r.target_cluster))
            .fold(0i64, |w, r| w.max(r.weight));
        if weight > 0 {
            list.push((c.name.to_string(), weight));
        }
    }
    if list.iter().fold(0i64, |s, (_, w)| s.wrapping_add(*w)) == 0 {
        list.extend(cands.iter().map(|c| (c.name.to_string(), 1)));
    }
    list
}

/// Divide `spec.replicas` by the static weights; the result is sorted by name and includes
/// weighted clusters that got 0 replicas (dropped later by the caller).
pub fn assign_by_static_weight(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
) -> Vec<TargetCluster> {
    let configured = spec
        .placement
        .as_ref()
        .and_then(|p| p.replica_scheduling.as_ref())
        .and_then(|s| s.weight_preference.as_ref());
    let default;
    let prefs = match configured {
        Some(p) => p,
        None => {
            default = default_weight_preference(cands);
            &default
        }
    };
    let weights = static_weights(cands, &prefs.static_weight_list);
    dispense_by_weight(spec.replicas, &[], &weights, &spec.resource.uid)
}
