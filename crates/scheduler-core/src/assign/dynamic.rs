//! Dynamic strategies (spec-algorithm §11.7): Aggregated and DynamicWeight.
//!
//! Both divide replicas in proportion to what clusters can take; Aggregated additionally
//! packs them onto as few clusters as possible. In Steady mode the previous placement is
//! kept and only the difference is divided (scale up) or the placement shrunk in proportion
//! (scale down); Fresh mode recomputes from scratch, counting current replicas as capacity.
//! All replica arithmetic is i32 with Go's wrapping.

use std::collections::{BTreeMap, BTreeSet};

use karmada_api::work::{ResourceBindingSpec, TargetCluster};

use super::gosort::go_sort;
use super::webster::dispense_by_weight;
use crate::detail::ClusterDetail;
use crate::error::ScheduleError;

/// Which dynamic strategy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicStrategy {
    Aggregated,
    DynamicWeight,
}

/// Whether to keep the previous distribution (Steady) or recompute it (Fresh).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Steady,
    Fresh,
}

/// Go's `sort.Sort` by replicas descending: equal counts keep their input order for up to
/// 12 entries and follow pdqsort's moves beyond that.
pub fn sort_by_replicas_desc(list: &mut [TargetCluster]) {
    go_sort(list, |a, b| a.replicas > b.replicas);
}

fn sum(list: &[TargetCluster]) -> i32 {
    list.iter().fold(0i32, |s, t| s.wrapping_add(t.replicas))
}

/// `MergeTargetClusters`: add `old` replicas onto matching `new` entries and append the
/// remaining `old` entries. Upstream appends them in Go map order (random when there are
/// several); we use their order in `old`, i.e. the previous `spec.clusters` order.
pub fn merge(old: Vec<TargetCluster>, mut new: Vec<TargetCluster>) -> Vec<TargetCluster> {
    if old.is_empty() {
        return new;
    }
    if new.is_empty() {
        return old;
    }
    let mut remaining: BTreeMap<&str, i32> = BTreeMap::new();
    for t in &old {
        remaining.insert(&t.name, t.replicas);
    }
    for e in &mut new {
        if let Some(v) = remaining.remove(e.name.as_str()) {
            e.replicas = e.replicas.wrapping_add(v);
        }
    }
    for t in &old {
        if let Some(v) = remaining.remove(t.name.as_str()) {
            new.push(TargetCluster::new(t.name.clone(), v));
        }
    }
    new
}

/// Divide `target` replicas over `avail` (weights = available replicas), then merge with
/// `prior`.
pub(crate) fn divide(
    strategy: DynamicStrategy,
    target: i32,
    mut avail: Vec<TargetCluster>,
    prior: Vec<TargetCluster>,
    uid: &str,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let total = sum(&avail);
    if total < target {
        return Err(ScheduleError::Unschedulable(format!(
            "Clusters available replicas {total} are not enough to schedule."
        )));
    }
    if strategy == DynamicStrategy::Aggregated {
        let held: BTreeSet<&str> = prior
            .iter()
            .filter(|t| t.replicas > 0)
            .map(|t| t.name.as_str())
            .collect();
        if !held.is_empty() {
            // Clusters that already hold replicas first (stable partition).
            let (mut first, rest): (Vec<_>, Vec<_>) = avail
                .into_iter()
                .partition(|t| held.contains(t.name.as_str()));
            first.extend(rest);
            avail = first;
        }
        let mut running = 0i32;
        if let Some(i) = avail.iter().position(|t| {
            running = running.wrapping_add(t.replicas);
            running >= target
        }) {
            avail.truncate(i + 1);
        }
    }
    let weights: Vec<(&str, i64)> = avail
        .iter()
        .map(|t| (t.name.as_str(), i64::from(t.replicas)))
        .collect();
    let fresh = dispense_by_weight(target, &[], &weights, uid);
    Ok(merge(prior, fresh))
}

/// Run a dynamic strategy. Errors carry the stage prefix (`failed to scale up: ...`) and
/// keep their class (insufficient capacity stays [`ScheduleError::Unschedulable`]).
pub fn assign_dynamic(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    strategy: DynamicStrategy,
    mode: Mode,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let names: BTreeSet<&str> = cands.iter().map(|c| c.name).collect();
    let scheduled: Vec<TargetCluster> = spec
        .clusters
        .iter()
        .filter(|t| names.contains(t.name.as_str()))
        .cloned()
        .collect();
    let assigned = sum(&scheduled);
    let uid = spec.resource.uid.as_str();
    let allocatable = || -> Vec<TargetCluster> {
        cands
            .iter()
            .map(|c| TargetCluster::new(c.name, c.allocatable_replicas))
            .collect()
    };

    if mode == Mode::Fresh {
        let mut avail = allocatable();
        for s in &scheduled {
            if let Some(a) = avail.iter_mut().find(|a| a.name == s.name) {
                a.replicas = a.replicas.wrapping_add(s.replicas);
            }
        }
        sort_by_replicas_desc(&mut avail);
        return divide(strategy, spec.replicas, avail, Vec::new(), uid)
            .map_err(|e| e.wrap("failed to do fresh scale"));
    }
    if assigned > spec.replicas {
        let mut avail = scheduled;
        sort_by_replicas_desc(&mut avail);
        return divide(strategy, spec.replicas, avail, Vec::new(), uid)
            .map_err(|e| e.wrap("failed to scale down"));
    }
    if assigned < spec.replicas {
        let mut avail = allocatable();
        sort_by_replicas_desc(&mut avail);
        return divide(
            strategy,
            spec.replicas.wrapping_sub(assigned),
            avail,
            scheduled,
            uid,
        )
        .map_err(|e| e.wrap("failed to scale up"));
    }
    Ok(scheduled)
}
