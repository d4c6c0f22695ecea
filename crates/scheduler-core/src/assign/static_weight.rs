//! Static weighting: replicas split by configured weights.

use karmada_api::policy::{ClusterAffinity, ClusterPreferences, StaticClusterWeight};
use karmada_api::work::{ResourceBindingSpec, TargetCluster};

use std::collections::HashMap;
use std::sync::Arc;

use super::webster::dispense;
use crate::detail::ClusterDetail;
use crate::selector::AffinityMatcher;
use crate::snapshot::{ClusterSet, SetKey, Snapshot};

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
    static_weights_in(None, cands, rules)
        .into_iter()
        .map(|(name, w, _)| (name, w))
        .collect()
}

/// A rule's verdicts: per candidate, or from the set of matching clusters of the snapshot.
enum Rule<'r> {
    Matcher(AffinityMatcher<'r>),
    Set(Arc<ClusterSet>),
}

/// [`static_weights`]; with the candidates' snapshot, a rule is answered from the set of
/// clusters matching it that the snapshot memoises (the ClusterAffinity filter's sets), when
/// that set exists already or the candidates are a good part of the snapshot (computing it
/// then costs at most a few times what testing the candidates would).
pub(crate) fn static_weights_in<'a>(
    snapshot: Option<&Snapshot>,
    cands: &[ClusterDetail<'a>],
    rules: &[StaticClusterWeight],
) -> Vec<(&'a str, i64, Option<usize>)> {
    let positioned = cands.iter().all(|c| c.position.is_some());
    let snapshot = snapshot.filter(|_| positioned);
    let mut by_name: HashMap<&str, i64> = HashMap::new();
    let mut tested: Vec<(Rule<'_>, i64)> = Vec::new();
    for r in rules {
        let m = AffinityMatcher::new(&r.target_cluster);
        if m.names_only() {
            for n in &r.target_cluster.cluster_names {
                let w = by_name.entry(n.as_str()).or_insert(0);
                *w = (*w).max(r.weight);
            }
            continue;
        }
        let m = m.indexed();
        let rule = match snapshot {
            Some(s) => {
                let key = SetKey::affinity(&r.target_cluster);
                match s.cached_cluster_set(&key) {
                    Some(set) => Rule::Set(set),
                    None if cands.len().saturating_mul(4) >= s.num_of_clusters() => {
                        Rule::Set(s.cluster_set(key, |c| m.matches(c)))
                    }
                    None => Rule::Matcher(m),
                }
            }
            None => Rule::Matcher(m),
        };
        tested.push((rule, r.weight));
    }
    let mut list: Vec<(&'a str, i64, Option<usize>)> = Vec::new();
    for c in cands {
        let named = if by_name.is_empty() {
            0
        } else {
            by_name.get(c.name).copied().unwrap_or(0)
        };
        let weight = tested
            .iter()
            .filter(|(rule, _)| match rule {
                Rule::Matcher(m) => m.matches(c.cluster),
                Rule::Set(set) => c.position.is_some_and(|p| set.contains(p)),
            })
            .fold(named, |w, (_, rw)| w.max(*rw));
        if weight > 0 {
            list.push((c.name, weight, c.position));
        }
    }
    if list.iter().fold(0i64, |s, (_, w, _)| s.wrapping_add(*w)) == 0 {
        list.extend(cands.iter().map(|c| (c.name, 1, c.position)));
    }
    list
}

/// Divide `spec.replicas` by the static weights; the result is sorted by name and includes
/// weighted clusters that got 0 replicas (dropped later by the caller).
pub fn assign_by_static_weight(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
) -> Vec<TargetCluster> {
    static_weight_parties(None, cands, spec)
        .into_iter()
        .map(|(name, seats)| TargetCluster::new(name, seats))
        .collect()
}

/// [`assign_by_static_weight`] without the entries of ≤ 0 replicas, which the pipeline
/// drops anyway (no name is copied for them).
pub(crate) fn assign_by_static_weight_nonzero(
    snapshot: Option<&Snapshot>,
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
) -> Vec<TargetCluster> {
    static_weight_parties(snapshot, cands, spec)
        .into_iter()
        .filter(|(_, seats)| *seats > 0)
        .map(|(name, seats)| TargetCluster::new(name, seats))
        .collect()
}

fn static_weight_parties<'a>(
    snapshot: Option<&Snapshot>,
    cands: &[ClusterDetail<'a>],
    spec: &ResourceBindingSpec,
) -> Vec<(&'a str, i32)> {
    let configured = spec
        .placement
        .as_ref()
        .and_then(|p| p.replica_scheduling.as_ref())
        .and_then(|s| s.weight_preference.as_ref());
    let weights = match configured {
        Some(p) => static_weights_in(snapshot, cands, &p.static_weight_list),
        // Upstream substitutes `default_weight_preference`: one rule per candidate naming it,
        // weight 1, so every candidate weighs 1 (there is a positive weight: no fallback).
        None => cands.iter().map(|c| (c.name, 1, c.position)).collect(),
    };
    let positions: Option<Vec<usize>> = weights.iter().map(|w| w.2).collect();
    let weights: Vec<(&str, i64)> = weights.iter().map(|&(n, w, _)| (n, w)).collect();
    dispense(
        spec.replicas,
        &weights,
        positions.as_deref(),
        &spec.resource.uid,
    )
}
