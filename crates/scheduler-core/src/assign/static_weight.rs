//! Static weighting (spec-algorithm §11.5): replicas split by configured weights.

use karmada_api::policy::{ClusterAffinity, ClusterPreferences, StaticClusterWeight};
use karmada_api::work::{ResourceBindingSpec, TargetCluster};

use std::collections::HashMap;

use super::webster::dispense;
use crate::detail::ClusterDetail;
use crate::selector::AffinityMatcher;

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
///
/// Each rule is prepared once ([`AffinityMatcher`]); rules that only list names are looked
/// up by name instead of being tested against every candidate.
pub fn static_weights<'a>(
    cands: &[ClusterDetail<'a>],
    rules: &[StaticClusterWeight],
) -> Vec<(&'a str, i64)> {
    let mut by_name: HashMap<&str, i64> = HashMap::new();
    let mut tested: Vec<(AffinityMatcher<'_>, i64)> = Vec::new();
    for r in rules {
        let m = AffinityMatcher::new(&r.target_cluster);
        if m.names_only() {
            for n in &r.target_cluster.cluster_names {
                let w = by_name.entry(n.as_str()).or_insert(0);
                *w = (*w).max(r.weight);
            }
        } else {
            tested.push((m.indexed(), r.weight));
        }
    }
    let mut list: Vec<(&'a str, i64)> = Vec::new();
    for c in cands {
        let named = if by_name.is_empty() {
            0
        } else {
            by_name.get(c.name).copied().unwrap_or(0)
        };
        let weight = tested
            .iter()
            .filter(|(m, _)| m.matches(c.cluster))
            .fold(named, |w, (_, rw)| w.max(*rw));
        if weight > 0 {
            list.push((c.name, weight));
        }
    }
    if list.iter().fold(0i64, |s, (_, w)| s.wrapping_add(*w)) == 0 {
        list.extend(cands.iter().map(|c| (c.name, 1)));
    }
    list
}

/// Divide `spec.replicas` by the static weights; the result is sorted by name and includes
/// weighted clusters that got 0 replicas (dropped later by the caller).
pub fn assign_by_static_weight(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
) -> Vec<TargetCluster> {
    static_weight_parties(cands, spec)
        .into_iter()
        .map(|(name, seats)| TargetCluster::new(name, seats))
        .collect()
}

/// [`assign_by_static_weight`] without the entries of ≤ 0 replicas, which the pipeline
/// drops anyway (no name is copied for them).
pub(crate) fn assign_by_static_weight_nonzero(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
) -> Vec<TargetCluster> {
    static_weight_parties(cands, spec)
        .into_iter()
        .filter(|(_, seats)| *seats > 0)
        .map(|(name, seats)| TargetCluster::new(name, seats))
        .collect()
}

fn static_weight_parties<'a>(
    cands: &[ClusterDetail<'a>],
    spec: &ResourceBindingSpec,
) -> Vec<(&'a str, i32)> {
    let configured = spec
        .placement
        .as_ref()
        .and_then(|p| p.replica_scheduling.as_ref())
        .and_then(|s| s.weight_preference.as_ref());
    let weights = match configured {
        Some(p) => static_weights(cands, &p.static_weight_list),
        // Upstream substitutes `default_weight_preference`: one rule per candidate naming it,
        // weight 1, so every candidate weighs 1 (there is a positive weight: no fallback).
        None => cands.iter().map(|c| (c.name, 1)).collect(),
    };
    dispense(spec.replicas, &weights, &spec.resource.uid)
}
