//! Dynamic strategies: Aggregated and DynamicWeight.
//!
//! Both divide replicas in proportion to what clusters can take; Aggregated additionally
//! packs them onto as few clusters as possible. In Steady mode the previous placement is
//! kept and only the difference is divided (scale up) or the placement shrunk in proportion
//! (scale down); Fresh mode recomputes from scratch, counting current replicas as capacity.
//! All replica arithmetic is i32 with Go's wrapping.
//!
//! The work is done on `Slot`s, which borrow the cluster names, so that dividing over
//! thousands of clusters copies no name; only the entries of the result are turned into
//! [`TargetCluster`]s.

use std::collections::{BTreeMap, HashMap, HashSet};

use karmada_api::work::{ResourceBindingSpec, TargetCluster};

use super::gosort::go_sort;
use super::webster::dispense;
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

/// A cluster name (borrowed) and a replica count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot<'a> {
    pub name: &'a str,
    pub replicas: i32,
    /// The candidate's snapshot position ([`ClusterDetail::position`]), if known.
    pub position: Option<usize>,
}

impl<'a> Slot<'a> {
    fn of(t: &'a TargetCluster) -> Self {
        Self {
            name: &t.name,
            replicas: t.replicas,
            position: None,
        }
    }

    fn target(self) -> TargetCluster {
        TargetCluster::new(self.name, self.replicas)
    }
}

/// What [`merge`] needs of an entry.
trait Entry: Sized {
    fn name(&self) -> &str;
    fn replicas(&self) -> i32;
    fn replicas_mut(&mut self) -> &mut i32;
    /// A new entry of this name with `replicas` (and nothing else).
    fn with_replicas(&self, replicas: i32) -> Self;
}

impl Entry for TargetCluster {
    fn name(&self) -> &str {
        &self.name
    }
    fn replicas(&self) -> i32 {
        self.replicas
    }
    fn replicas_mut(&mut self) -> &mut i32 {
        &mut self.replicas
    }
    fn with_replicas(&self, replicas: i32) -> Self {
        TargetCluster::new(self.name.clone(), replicas)
    }
}

impl Entry for Slot<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn replicas(&self) -> i32 {
        self.replicas
    }
    fn replicas_mut(&mut self) -> &mut i32 {
        &mut self.replicas
    }
    fn with_replicas(&self, replicas: i32) -> Self {
        Self {
            name: self.name,
            replicas,
            position: self.position,
        }
    }
}

fn sum(list: &[Slot<'_>]) -> i32 {
    list.iter().fold(0i32, |s, t| s.wrapping_add(t.replicas))
}

/// `MergeTargetClusters`: add `old` replicas onto matching `new` entries and append the
/// remaining `old` entries. Upstream appends them in Go map order (random when there are
/// several); we use their order in `old`, i.e. the previous `spec.clusters` order.
pub fn merge(old: Vec<TargetCluster>, new: Vec<TargetCluster>) -> Vec<TargetCluster> {
    merge_entries(old, new)
}

fn merge_entries<E: Entry>(old: Vec<E>, mut new: Vec<E>) -> Vec<E> {
    if old.is_empty() {
        return new;
    }
    if new.is_empty() {
        return old;
    }
    let mut remaining: BTreeMap<&str, i32> = BTreeMap::new();
    for t in &old {
        remaining.insert(t.name(), t.replicas());
    }
    for e in &mut new {
        if let Some(v) = remaining.remove(e.name()) {
            let r = e.replicas_mut();
            *r = r.wrapping_add(v);
        }
    }
    let mut tail = Vec::new();
    for t in &old {
        if let Some(v) = remaining.remove(t.name()) {
            tail.push(t.with_replicas(v));
        }
    }
    new.extend(tail);
    new
}

/// Divide `target` replicas over `avail` (weights = available replicas), then merge with
/// `prior` (the owned form, for tests).
#[cfg(test)]
pub(crate) fn divide(
    strategy: DynamicStrategy,
    target: i32,
    avail: Vec<TargetCluster>,
    prior: Vec<TargetCluster>,
    uid: &str,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let avail_slots = avail.iter().map(Slot::of).collect();
    let prior_slots = prior.iter().map(Slot::of).collect();
    Ok(
        divide_slots(strategy, target, avail_slots, prior_slots, uid)?
            .into_iter()
            .map(Slot::target)
            .collect(),
    )
}

fn divide_slots<'a>(
    strategy: DynamicStrategy,
    target: i32,
    mut avail: Vec<Slot<'a>>,
    prior: Vec<Slot<'a>>,
    uid: &str,
) -> Result<Vec<Slot<'a>>, ScheduleError> {
    let total = sum(&avail);
    if total < target {
        return Err(ScheduleError::Unschedulable(format!(
            "Clusters available replicas {total} are not enough to schedule."
        )));
    }
    if strategy == DynamicStrategy::Aggregated {
        let held: HashSet<&str> = prior
            .iter()
            .filter(|t| t.replicas > 0)
            .map(|t| t.name)
            .collect();
        if !held.is_empty() {
            // Clusters that already hold replicas first (stable partition).
            let (mut first, rest): (Vec<_>, Vec<_>) =
                avail.into_iter().partition(|t| held.contains(t.name));
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
        .map(|t| (t.name, i64::from(t.replicas)))
        .collect();
    let positions: Option<Vec<usize>> = avail.iter().map(|t| t.position).collect();
    let fresh = dispense(target, &weights, positions.as_deref(), uid)
        .into_iter()
        .map(|(name, replicas)| Slot {
            name,
            replicas,
            position: None,
        })
        .collect();
    Ok(merge_entries(prior, fresh))
}

/// Run a dynamic strategy. Errors carry the stage prefix (`failed to scale up: ...`) and
/// keep their class (insufficient capacity stays [`ScheduleError::Unschedulable`]).
pub fn assign_dynamic(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    strategy: DynamicStrategy,
    mode: Mode,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    Ok(dynamic_slots(cands, spec, strategy, mode)?
        .into_iter()
        .map(Slot::target)
        .collect())
}

/// [`assign_dynamic`] without the entries of ≤ 0 replicas, which the pipeline drops anyway.
pub(crate) fn assign_dynamic_nonzero(
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    strategy: DynamicStrategy,
    mode: Mode,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let mut targets = assign_dynamic(cands, spec, strategy, mode)?;
    targets.retain(|t| t.replicas > 0);
    Ok(targets)
}

fn dynamic_slots<'a>(
    cands: &[ClusterDetail<'a>],
    spec: &'a ResourceBindingSpec,
    strategy: DynamicStrategy,
    mode: Mode,
) -> Result<Vec<Slot<'a>>, ScheduleError> {
    // The previous result restricted to the candidates, in its own order.
    let scheduled: Vec<Slot<'a>> = if spec.clusters.is_empty() {
        Vec::new()
    } else {
        let names: HashSet<&str> = cands.iter().map(|c| c.name).collect();
        spec.clusters
            .iter()
            .filter(|t| names.contains(t.name.as_str()))
            .map(Slot::of)
            .collect()
    };
    let assigned = sum(&scheduled);
    let uid = spec.resource.uid.as_str();
    let allocatable = || -> Vec<Slot<'a>> {
        cands
            .iter()
            .map(|c| Slot {
                name: c.name,
                replicas: c.allocatable_replicas,
                position: c.position,
            })
            .collect()
    };
    let by_replicas_desc = |list: &mut [Slot<'a>]| go_sort(list, |a, b| a.replicas > b.replicas);

    if mode == Mode::Fresh {
        let mut avail = allocatable();
        if !scheduled.is_empty() {
            // The first candidate of each name, as a linear search would find it.
            let mut first: HashMap<&str, usize> = HashMap::with_capacity(avail.len());
            for (i, a) in avail.iter().enumerate() {
                first.entry(a.name).or_insert(i);
            }
            for s in &scheduled {
                if let Some(&i) = first.get(s.name) {
                    avail[i].replicas = avail[i].replicas.wrapping_add(s.replicas);
                }
            }
        }
        by_replicas_desc(&mut avail);
        return divide_slots(strategy, spec.replicas, avail, Vec::new(), uid)
            .map_err(|e| e.wrap("failed to do fresh scale"));
    }
    if assigned > spec.replicas {
        let mut avail = scheduled;
        by_replicas_desc(&mut avail);
        return divide_slots(strategy, spec.replicas, avail, Vec::new(), uid)
            .map_err(|e| e.wrap("failed to scale down"));
    }
    if assigned < spec.replicas {
        let mut avail = allocatable();
        by_replicas_desc(&mut avail);
        return divide_slots(
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
