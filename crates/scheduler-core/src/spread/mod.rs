//! Spread constraints: topology grouping and cluster selection.
//!
//! [`group::group_clusters`] orders the scored clusters canonically and, when a spread
//! constraint asks for it, builds region/zone/provider groups with their scores;
//! [`select_best_clusters`] then picks the candidates: all of them, the best `maxGroups` by
//! cluster ([`by_cluster`]), or whole regions chosen by an exhaustive search
//! ([`by_region`], [`select_groups`]).

pub mod by_cluster;
pub mod by_region;
pub mod group;
pub mod select_groups;

use std::collections::BTreeMap;

use karmada_api::policy::{
    Placement, ReplicaDivisionPreference, ReplicaSchedulingType, SpreadConstraint, SpreadFieldValue,
};

use crate::detail::ClusterDetail;

pub use group::{
    GroupClustersInfo, GroupInfo, group_clusters, group_clusters_name_sorted, overflow_order,
    sort_clusters,
};

/// `needReplicas` meaning "do not check capacity" (Duplicated placements).
pub const INVALID_REPLICAS: i32 = -1;

/// The clusters chosen for assignment, in selection order.
#[derive(Clone, Debug, Default)]
pub struct Selection<'a> {
    /// The candidates, in the order assignment must see them.
    pub clusters: Vec<ClusterDetail<'a>>,
    /// Regions chosen by the region search, best first (empty on the other paths).
    pub regions: Vec<String>,
}

/// Choose the candidates. Errors carry the reference's text without the
/// `failed to select clusters: ` prefix, which the pipeline adds.
pub fn select_best_clusters<'a>(
    placement: &Placement,
    info: &GroupClustersInfo<'a>,
    need_replicas: i32,
) -> Result<Selection<'a>, String> {
    if placement.spread_constraints.is_empty() || should_ignore_spread_constraint(placement) {
        return Ok(Selection {
            clusters: info.clusters.clone(),
            regions: Vec::new(),
        });
    }
    let need = if should_ignore_available_resource(placement) {
        INVALID_REPLICAS
    } else {
        need_replicas
    };

    // A later constraint for the same field overwrites an earlier one.
    let mut by_field: BTreeMap<Option<SpreadFieldValue>, &SpreadConstraint> = BTreeMap::new();
    for sc in &placement.spread_constraints {
        by_field.insert(sc.spread_by_field, sc);
    }
    let zero = SpreadConstraint::default();
    let cluster_sc = by_field.get(&Some(SpreadFieldValue::Cluster)).copied();
    if let Some(region_sc) = by_field.get(&Some(SpreadFieldValue::Region)) {
        return by_region::select(region_sc, cluster_sc.unwrap_or(&zero), info);
    }
    if let Some(sc) = cluster_sc {
        let clusters = by_cluster::select(sc, &info.clusters, need)?;
        return Ok(Selection {
            clusters,
            regions: Vec::new(),
        });
    }
    Err("just support cluster and region spread constraint".to_string())
}

/// Static weighting ignores spread constraints altogether.
pub fn should_ignore_spread_constraint(placement: &Placement) -> bool {
    let Some(s) = &placement.replica_scheduling else {
        return false;
    };
    s.replica_scheduling_type == Some(ReplicaSchedulingType::Divided)
        && s.replica_division_preference == Some(ReplicaDivisionPreference::Weighted)
        && match &s.weight_preference {
            None => true,
            Some(wp) => !wp.static_weight_list.is_empty() && wp.dynamic_weight.is_none(),
        }
}

/// Duplicated placements (or no `replicaScheduling`) select without looking at capacity.
pub fn should_ignore_available_resource(placement: &Placement) -> bool {
    match &placement.replica_scheduling {
        None => true,
        Some(s) => s.replica_scheduling_type == Some(ReplicaSchedulingType::Duplicated),
    }
}

/// Whether some constraint spreads by this field.
pub fn is_spread_constraint_existed(
    constraints: &[SpreadConstraint],
    field: SpreadFieldValue,
) -> bool {
    constraints
        .iter()
        .any(|sc| sc.spread_by_field == Some(field))
}

#[cfg(test)]
mod testutil {
    use std::sync::LazyLock;

    use karmada_api::cluster::{Cluster, ClusterSpec};

    use crate::detail::ClusterDetail;

    /// One shared cluster object for details whose `cluster` field the test ignores.
    pub static ANY: LazyLock<Cluster> =
        LazyLock::new(|| Cluster::new("any", ClusterSpec::default()));

    /// `NewClusterWithTopology` of the upstream tests.
    pub fn topo(name: &str, provider: &str, region: &str, zone: &str) -> Cluster {
        let mut c = Cluster::new(name, ClusterSpec::default());
        c.spec.provider = provider.into();
        c.spec.region = region.into();
        c.spec.zones = vec![zone.into()];
        c
    }

    pub fn detail<'a>(
        name: &'a str,
        score: i64,
        available: i64,
        cluster: &'a Cluster,
    ) -> ClusterDetail<'a> {
        ClusterDetail {
            name,
            cluster,
            score,
            overflow_order: 0,
            allocatable_replicas: available as i32,
            available_replicas: available,
            position: None,
        }
    }

    pub fn names<'a>(d: &[ClusterDetail<'a>]) -> Vec<&'a str> {
        d.iter().map(|c| c.name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use karmada_api::policy::{
        ClusterAffinity, ClusterPreferences, ReplicaSchedulingStrategy, StaticClusterWeight,
    };

    fn sc(field: SpreadFieldValue, min: i64, max: i64) -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: Some(field),
            min_groups: min,
            max_groups: max,
            ..Default::default()
        }
    }

    fn strategy(
        t: ReplicaSchedulingType,
        p: Option<ReplicaDivisionPreference>,
    ) -> ReplicaSchedulingStrategy {
        ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(t),
            replica_division_preference: p,
            weight_preference: None,
        }
    }

    // karmada v1.18.2 spreadconstraint/select_clusters_test.go: TestSelectBestClusters.
    #[test]
    fn select_best() {
        let (c4, c2, c3, c1) = (
            topo("member4", "P2", "R2", "Z2"),
            topo("member2", "P1", "R1", "Z2"),
            topo("member3", "P2", "R1", "Z1"),
            topo("member1", "P1", "R1", "Z1"),
        );
        let info = GroupClustersInfo {
            clusters: vec![
                detail("member4", 60, 50, &c4),
                detail("member2", 40, 60, &c2),
                detail("member3", 30, 80, &c3),
                detail("member1", 20, 40, &c1),
            ],
            ..Default::default()
        };
        let cluster12 = vec![sc(SpreadFieldValue::Cluster, 1, 2)];
        let p = |rs: Option<ReplicaSchedulingStrategy>| Placement {
            spread_constraints: cluster12.clone(),
            replica_scheduling: rs,
            ..Default::default()
        };
        use ReplicaSchedulingType::*;

        // by cluster score (no replicaScheduling ⇒ capacity ignored)
        let got = select_best_clusters(&p(None), &info, 100).unwrap();
        assert_eq!(names(&got.clusters), ["member4", "member2"]);
        // duplicated ignores available resources
        let got = select_best_clusters(&p(Some(strategy(Duplicated, None))), &info, 120).unwrap();
        assert_eq!(names(&got.clusters), ["member4", "member2"]);
        // static weight ignores the spread constraint altogether
        let mut sw = strategy(Divided, Some(ReplicaDivisionPreference::Weighted));
        sw.weight_preference = Some(ClusterPreferences {
            static_weight_list: vec![StaticClusterWeight {
                target_cluster: ClusterAffinity {
                    cluster_names: vec!["member1".into()],
                    ..Default::default()
                },
                weight: 2,
            }],
            dynamic_weight: None,
        });
        let got = select_best_clusters(&p(Some(sw)), &info, 120).unwrap();
        assert_eq!(
            names(&got.clusters),
            ["member4", "member2", "member3", "member1"]
        );
        // satisfy available resources: member2 swapped for member3
        let got = select_best_clusters(&p(Some(strategy(Divided, None))), &info, 120).unwrap();
        assert_eq!(names(&got.clusters), ["member4", "member3"]);
        // insufficient resources
        let err = select_best_clusters(&p(Some(strategy(Divided, None))), &info, 200).unwrap_err();
        assert_eq!(err, "no enough resource when selecting 2 clusters");
        // more min groups than clusters
        let p7 = Placement {
            spread_constraints: vec![sc(SpreadFieldValue::Cluster, 7, 7)],
            ..Default::default()
        };
        let err = select_best_clusters(&p7, &info, 30).unwrap_err();
        assert_eq!(
            err,
            "the number of feasible clusters is less than spreadConstraint.MinGroups"
        );
    }

    #[test]
    fn unsupported_fields() {
        let c = topo("m", "P", "R", "Z");
        let info = GroupClustersInfo {
            clusters: vec![detail("m", 0, 5, &c)],
            ..Default::default()
        };
        let zone_only = Placement {
            spread_constraints: vec![sc(SpreadFieldValue::Zone, 1, 1)],
            ..Default::default()
        };
        assert_eq!(
            select_best_clusters(&zone_only, &info, 1).unwrap_err(),
            "just support cluster and region spread constraint"
        );
        let label_only = Placement {
            spread_constraints: vec![SpreadConstraint {
                spread_by_label: "x".into(),
                min_groups: 1,
                max_groups: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            select_best_clusters(&label_only, &info, 1).unwrap_err(),
            "just support cluster and region spread constraint"
        );
        // [zone, cluster] behaves like [cluster].
        let zc = Placement {
            spread_constraints: vec![
                sc(SpreadFieldValue::Zone, 1, 1),
                sc(SpreadFieldValue::Cluster, 1, 1),
            ],
            ..Default::default()
        };
        assert_eq!(
            names(&select_best_clusters(&zc, &info, 1).unwrap().clusters),
            ["m"]
        );
    }

    // karmada v1.18.2 spreadconstraint/util_test.go: TestIsSpreadConstraintExisted.
    #[test]
    fn spread_constraint_existed() {
        use SpreadFieldValue::*;
        assert!(is_spread_constraint_existed(
            &[sc(Cluster, 0, 0), sc(Zone, 0, 0)],
            Cluster
        ));
        assert!(!is_spread_constraint_existed(
            &[sc(Region, 0, 0), sc(Zone, 0, 0)],
            Cluster
        ));
    }
}
