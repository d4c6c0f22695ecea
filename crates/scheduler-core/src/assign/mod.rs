//! Replica assignment: how many replicas each selected cluster gets.
//!
//! Entry point: [`assign_replicas`]. The strategy follows `placement.replicaScheduling`
//! (Duplicated, static weights, dynamic weights, Aggregated); overflow affinities split the
//! candidates into tiers that are filled in order; Fresh mode (a manual reschedule) ignores
//! the previous distribution. Everything is pure: the binding and the candidates in, the new
//! `spec.clusters` out.

pub mod dynamic;
pub mod gosort;
pub mod static_weight;
pub mod webster;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::ClusterName;
use karmada_api::policy::{
    Placement, ReplicaDivisionPreference, ReplicaSchedulingStrategy, ReplicaSchedulingType,
};
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus, TargetCluster};

use crate::detail::ClusterDetail;
use crate::error::ScheduleError;
use crate::snapshot::Snapshot;

pub use dynamic::{DynamicStrategy, Mode, merge, sort_by_replicas_desc};

/// The strategy a binding's placement asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Duplicated,
    Aggregated,
    StaticWeight,
    DynamicWeight,
}

impl Strategy {
    /// Upstream's name of the strategy.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duplicated => "Duplicated",
            Self::Aggregated => "Aggregated",
            Self::StaticWeight => "StaticWeight",
            Self::DynamicWeight => "DynamicWeight",
        }
    }
}

/// The strategy of a placement, or the reference's "unsupported" error when
/// `replicaSchedulingType`/`replicaDivisionPreference` are empty (defaulting bypassed).
pub fn strategy_of(placement: &Placement) -> Result<Strategy, ScheduleError> {
    let rs = placement.replica_scheduling.as_ref();
    match placement.replica_scheduling_type() {
        Some(ReplicaSchedulingType::Duplicated) => return Ok(Strategy::Duplicated),
        Some(ReplicaSchedulingType::Divided) => {
            match rs.and_then(|s| s.replica_division_preference) {
                Some(ReplicaDivisionPreference::Aggregated) => return Ok(Strategy::Aggregated),
                Some(ReplicaDivisionPreference::Weighted) => {
                    let dynamic = rs
                        .and_then(|s| s.weight_preference.as_ref())
                        .is_some_and(|w| w.dynamic_weight.is_some());
                    return Ok(if dynamic {
                        Strategy::DynamicWeight
                    } else {
                        Strategy::StaticWeight
                    });
                }
                None => {}
            }
        }
        None => {}
    }
    Err(unsupported(rs))
}

fn unsupported(rs: Option<&ReplicaSchedulingStrategy>) -> ScheduleError {
    let t = rs
        .and_then(|s| s.replica_scheduling_type)
        .map_or("", |t| t.as_str());
    let p = rs
        .and_then(|s| s.replica_division_preference)
        .map_or("", |p| p.as_str());
    ScheduleError::Other(format!(
        "unsupported replica scheduling strategy, replicaSchedulingType: {t}, \
         replicaDivisionPreference: {p}, please try another scheduling strategy"
    ))
}

/// `RescheduleRequired`: a manual reschedule was requested after the last successful
/// schedule (both timestamps set, the trigger strictly later).
pub fn reschedule_required(triggered_at: Option<&Time>, last_scheduled: Option<&Time>) -> bool {
    matches!((triggered_at, last_scheduled), (Some(t), Some(l)) if t.0 > l.0)
}

/// Fresh when a reschedule was requested, Steady otherwise.
pub fn assignment_mode(spec: &ResourceBindingSpec, status: &ResourceBindingStatus) -> Mode {
    if reschedule_required(
        spec.reschedule_triggered_at.as_ref(),
        status.last_scheduled_time.as_ref(),
    ) {
        Mode::Fresh
    } else {
        Mode::Steady
    }
}

/// Assign replicas to the selected clusters.
///
/// Contract (the pipeline relies on it):
/// - `candidates` are the selected clusters in selection order; `spec.clusters` is the
///   previous result; `status` supplies `lastScheduledTime` and the observed affinity name.
/// - Non-workloads (replicas 0 and no replica requirements) and multi-component workloads
///   get every candidate with 0 replicas, in candidate order.
/// - Workloads get the strategy's result with every entry of ≤ 0 replicas dropped.
/// - Errors are returned *without* the `failed to assign replicas: ` prefix, which the
///   caller adds with [`ScheduleError::wrap`]:
///   - `no clusters available to schedule` ([`ScheduleError::Other`]) for no candidates;
///   - `unsupported replica scheduling strategy, ...` ([`ScheduleError::Other`]);
///   - `failed to scale up: Clusters available replicas <n> are not enough to schedule.`
///     (likewise `failed to scale down: ` and `failed to do fresh scale: `) and, with
///     overflow affinities, `Clusters available replicas are not enough to schedule.`, all
///     [`ScheduleError::Unschedulable`].
/// - A binding without `placement` is treated as an empty placement (Duplicated, no
///   overflow); upstream never schedules such a binding.
pub fn assign_replicas(
    candidates: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    assign_replicas_in(None, candidates, spec, status)
}

/// [`assign_replicas`] for candidates of `snapshot` ([`ClusterDetail::position`] set): the
/// static weight rules are then answered from the sets the snapshot memoises. Same result.
pub fn assign_replicas_in(
    snapshot: Option<&Snapshot>,
    candidates: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    if candidates.is_empty() {
        return Err(ScheduleError::Other(
            "no clusters available to schedule".to_string(),
        ));
    }
    if (spec.replicas > 0 || spec.replica_requirements.is_some()) && spec.components.len() <= 1 {
        return assign_workload(snapshot, candidates, spec, status);
    }
    Ok(candidates
        .iter()
        .map(|c| TargetCluster::new(c.name, 0))
        .collect())
}

/// v1.19 `buildTargetComponents`: a multi-template workload (more than one component) placed
/// as a whole in one cluster gets, in each target, every component with its full replica
/// count. The caller decides applicability (gate `MultiplePodTemplatesScheduling`, more than
/// one component, single-cluster placement); this only fills the entries.
pub fn attach_component_results(targets: &mut [TargetCluster], spec: &ResourceBindingSpec) {
    for t in targets {
        t.set_components(
            spec.components
                .iter()
                .map(|c| karmada_api::work::TargetComponent {
                    name: c.name.clone(),
                    replicas: c.replicas,
                })
                .collect(),
        );
    }
}

/// Whether the observed affinity term has overflow affinities.
pub fn overflow_enabled(spec: &ResourceBindingSpec, status: &ResourceBindingStatus) -> bool {
    let Some(p) = &spec.placement else {
        return false;
    };
    let observed = &status.scheduler_observed_affinity_name;
    if p.cluster_affinity.is_some() || observed.is_empty() {
        return false;
    }
    let Some(terms) = &p.cluster_affinities else {
        return false;
    };
    terms
        .iter()
        .any(|t| &t.affinity_name == observed && t.overflow_affinities.is_some())
}

fn assign_workload(
    snapshot: Option<&Snapshot>,
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    if !overflow_enabled(spec, status) {
        return assign_to(snapshot, cands, spec, status);
    }
    let mut tiers: BTreeMap<i32, (Vec<ClusterDetail<'_>>, i64)> = BTreeMap::new();
    for c in cands {
        let tier = tiers.entry(c.overflow_order).or_default();
        tier.0.push(c.clone());
        tier.1 = tier.1.wrapping_add(c.available_replicas);
    }
    let mut remaining = spec.replicas;
    let mut tier_spec = spec.clone();
    let mut out = Vec::new();
    // Upstream walks orders 0..=max; empty orders (and negative ones) are skipped.
    for (_, (tier, available)) in tiers.range(0..) {
        tier_spec.replicas = i64::from(remaining).min(*available) as i32;
        out.extend(assign_to(snapshot, tier, &tier_spec, status)?);
        remaining = remaining.wrapping_sub(tier_spec.replicas);
        if remaining <= 0 {
            break;
        }
    }
    if remaining > 0 {
        return Err(ScheduleError::Unschedulable(
            "Clusters available replicas are not enough to schedule.".to_string(),
        ));
    }
    Ok(out)
}

/// One strategy run on one set of candidates, then entries of ≤ 0 replicas dropped (the
/// strategies' `_nonzero` forms never build them).
fn assign_to(
    snapshot: Option<&Snapshot>,
    cands: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let default_placement = Placement::default();
    let placement = spec.placement.as_ref().unwrap_or(&default_placement);
    Ok(match strategy_of(placement)? {
        Strategy::Duplicated if spec.replicas > 0 => cands
            .iter()
            .map(|c| TargetCluster::new(c.name, spec.replicas))
            .collect(),
        Strategy::Duplicated => Vec::new(),
        Strategy::StaticWeight => {
            static_weight::assign_by_static_weight_nonzero(snapshot, cands, spec)
        }
        Strategy::Aggregated => dynamic::assign_dynamic_nonzero(
            cands,
            spec,
            DynamicStrategy::Aggregated,
            assignment_mode(spec, status),
        )?,
        Strategy::DynamicWeight => dynamic::assign_dynamic_nonzero(
            cands,
            spec,
            DynamicStrategy::DynamicWeight,
            assignment_mode(spec, status),
        )?,
    })
}

/// Drop entries with ≤ 0 replicas, rebuilding each as a plain `{name, replicas}`.
pub fn remove_zero_replicas(list: Vec<TargetCluster>) -> Vec<TargetCluster> {
    list.into_iter()
        .filter(|t| t.replicas > 0)
        .map(|t| TargetCluster::new(t.name, t.replicas))
        .collect()
}

/// `--enable-empty-workload-propagation`: append every selected
/// cluster without an entry, with 0 replicas, in selection order.
pub fn attach_zero_replica_clusters(
    selected: &[ClusterDetail<'_>],
    mut result: Vec<TargetCluster>,
) -> Vec<TargetCluster> {
    let present: BTreeSet<ClusterName> = result.iter().map(|t| t.name.clone()).collect();
    for c in selected {
        if !present.contains(c.name) {
            result.push(TargetCluster::new(c.name, 0));
        }
    }
    result
}

#[cfg(test)]
mod tests;
