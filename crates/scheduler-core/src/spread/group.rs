//! Canonical cluster order and topology groups.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use karmada_api::cluster::Cluster;
use karmada_api::policy::{Placement, ReplicaSchedulingType, SpreadConstraint, SpreadFieldValue};
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};

use crate::detail::ClusterDetail;
use crate::predicates::placement_of;
use crate::selector::cluster_matches;

use super::{is_spread_constraint_existed, should_ignore_spread_constraint};

/// One replica outweighs any average cluster score (0..=100) in a group score.
const WEIGHT_UNIT: i64 = 1000;

/// Overflow order of a cluster matching no affinity of the observed term.
pub const UNMATCHED_OVERFLOW_ORDER: i32 = 1000;

/// A region, zone or provider with its clusters in canonical order.
#[derive(Clone, Debug, Default)]
pub struct GroupInfo<'a> {
    /// The region/zone/provider value.
    pub name: String,
    /// The group score (only region scores are ever used).
    pub score: i64,
    /// Sum of the members' available replicas.
    pub available_replicas: i64,
    /// Members, canonical order.
    pub clusters: Vec<ClusterDetail<'a>>,
}

/// The scored clusters, canonically ordered, and their topology groups.
#[derive(Clone, Debug, Default)]
pub struct GroupClustersInfo<'a> {
    /// All clusters: overflow order asc, score desc, available replicas desc, name asc.
    pub clusters: Vec<ClusterDetail<'a>>,
    /// Region groups (present when a constraint spreads by region).
    pub regions: BTreeMap<String, GroupInfo<'a>>,
    /// Zone groups; a cluster joins one group per entry of `spec.zones`.
    pub zones: BTreeMap<String, GroupInfo<'a>>,
    /// Provider groups.
    pub providers: BTreeMap<String, GroupInfo<'a>>,
}

/// The canonical comparator: overflow order asc, score desc, available replicas desc, name asc.
/// Details of one snapshot compare their positions instead of their names (the snapshot is
/// sorted by name, so both orders agree).
pub fn canonical_cmp(a: &ClusterDetail<'_>, b: &ClusterDetail<'_>) -> Ordering {
    a.overflow_order
        .cmp(&b.overflow_order)
        .then_with(|| b.score.cmp(&a.score))
        .then_with(|| b.available_replicas.cmp(&a.available_replicas))
        .then_with(|| match (a.position, b.position) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => a.name.cmp(b.name),
        })
}

/// Sort canonically. Total order (names are unique), so any sort gives upstream's result.
pub fn sort_clusters(clusters: &mut [ClusterDetail<'_>]) {
    clusters.sort_unstable_by(canonical_cmp);
}

/// The overflow tier of a cluster: 0 for the inline affinity (or when
/// `clusterAffinities` is not in use), k+1 for the k-th overflow affinity, 1000 otherwise.
pub fn overflow_order(
    cluster: &Cluster,
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
) -> i32 {
    let Some(p) = &spec.placement else { return 0 };
    let terms = match &p.cluster_affinities {
        Some(t) if p.cluster_affinity.is_none() && !t.is_empty() => t,
        _ => return 0,
    };
    let Some(term) = terms
        .iter()
        .find(|t| t.affinity_name == status.scheduler_observed_affinity_name)
    else {
        return UNMATCHED_OVERFLOW_ORDER;
    };
    if cluster_matches(cluster, &term.affinity) {
        return 0;
    }
    for (k, o) in term.overflow_affinities.iter().flatten().enumerate() {
        if cluster_matches(cluster, &o.affinity) {
            return i32::try_from(k + 1).unwrap_or(UNMATCHED_OVERFLOW_ORDER);
        }
    }
    UNMATCHED_OVERFLOW_ORDER
}

/// Whether no topology groups are needed: no constraints, a single `cluster` constraint, or
/// static weighting (which ignores spread constraints).
pub fn is_topology_ignored(placement: &Placement) -> bool {
    let sc = &placement.spread_constraints;
    sc.is_empty()
        || (sc.len() == 1 && sc[0].spread_by_field == Some(SpreadFieldValue::Cluster))
        || should_ignore_spread_constraint(placement)
}

/// Order the details canonically and build the topology groups the constraints need.
pub fn group_clusters<'a>(
    mut details: Vec<ClusterDetail<'a>>,
    spec: &ResourceBindingSpec,
) -> GroupClustersInfo<'a> {
    sort_clusters(&mut details);
    build_topology(details, spec)
}

/// [`group_clusters`] for details in strictly ascending name order (the pipeline's: the
/// feasible clusters keep the snapshot's order). A stable sort on overflow order, score and
/// available replicas then leaves ties in name order, which is the canonical order, without
/// comparing a single name.
pub fn group_clusters_name_sorted<'a>(
    mut details: Vec<ClusterDetail<'a>>,
    spec: &ResourceBindingSpec,
) -> GroupClustersInfo<'a> {
    debug_assert!(details.windows(2).all(|w| w[0].name < w[1].name));
    details.sort_by(|a, b| {
        a.overflow_order
            .cmp(&b.overflow_order)
            .then_with(|| b.score.cmp(&a.score))
            .then_with(|| b.available_replicas.cmp(&a.available_replicas))
    });
    build_topology(details, spec)
}

/// The topology groups of canonically ordered details.
fn build_topology<'a>(
    details: Vec<ClusterDetail<'a>>,
    spec: &ResourceBindingSpec,
) -> GroupClustersInfo<'a> {
    let placement = placement_of(spec);
    let mut info = GroupClustersInfo {
        clusters: details,
        ..Default::default()
    };
    if is_topology_ignored(placement) {
        return info;
    }
    let constraints = &placement.spread_constraints;
    for (field, groups) in [
        (SpreadFieldValue::Zone, &mut info.zones),
        (SpreadFieldValue::Region, &mut info.regions),
        (SpreadFieldValue::Provider, &mut info.providers),
    ] {
        if is_spread_constraint_existed(constraints, field) {
            *groups = build_groups(&info.clusters, spec, constraints, field);
        }
    }
    info
}

/// The groups a cluster joins for `field`: each entry of `spec.zones`, or `spec.region` /
/// `spec.provider` when set.
fn group_keys(c: &Cluster, field: SpreadFieldValue) -> impl Iterator<Item = &str> {
    let (one, many): (&str, &[String]) = match field {
        SpreadFieldValue::Zone => ("", &c.spec.zones),
        SpreadFieldValue::Region => (&c.spec.region, &[]),
        SpreadFieldValue::Provider => (&c.spec.provider, &[]),
        SpreadFieldValue::Cluster => ("", &[]),
    };
    (!one.is_empty())
        .then_some(one)
        .into_iter()
        .chain(many.iter().map(String::as_str))
}

fn build_groups<'a>(
    clusters: &[ClusterDetail<'a>],
    spec: &ResourceBindingSpec,
    constraints: &[SpreadConstraint],
    field: SpreadFieldValue,
) -> BTreeMap<String, GroupInfo<'a>> {
    let mut groups: BTreeMap<String, GroupInfo<'a>> = BTreeMap::new();
    for c in clusters {
        for key in group_keys(c.cluster, field) {
            let g = match groups.get_mut(key) {
                Some(g) => g,
                None => groups.entry(key.to_string()).or_insert_with(|| GroupInfo {
                    name: key.to_string(),
                    ..Default::default()
                }),
            };
            g.clusters.push(c.clone());
            g.available_replicas += c.available_replicas;
        }
    }
    // minGroups of the last constraint on this field.
    let min_groups = constraints
        .iter()
        .rfind(|sc| sc.spread_by_field == Some(field))
        .map_or(0, |sc| sc.min_groups);
    for g in groups.values_mut() {
        g.score = group_score(&g.clusters, spec, min_groups);
    }
    groups
}

/// The score of a group: the replicas it can take towards its share,
/// times 1000, plus the average score of the clusters needed. Duplicated placements count the
/// clusters that can hold every replica instead.
pub fn group_score(
    clusters: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
    group_min_groups: i64,
) -> i64 {
    let duplicated = match &spec.placement {
        None => true,
        Some(p) => p.replica_scheduling_type() == Some(ReplicaSchedulingType::Duplicated),
    };
    if duplicated {
        return group_score_for_duplicate(clusters, spec);
    }
    let target = go_f64_to_i64((spec.replicas as f64 / group_min_groups as f64).ceil());
    let mut cluster_min = placement_of(spec)
        .spread_constraints
        .iter()
        .rfind(|sc| sc.spread_by_field == Some(SpreadFieldValue::Cluster))
        .map_or(0, |sc| sc.min_groups);
    cluster_min = cluster_min.max(group_min_groups);

    let (mut sum_avail, mut sum_score, mut n) = (0i64, 0i64, 0i64);
    for c in clusters {
        sum_avail = sum_avail.wrapping_add(c.available_replicas);
        sum_score = sum_score.wrapping_add(c.score);
        n += 1;
        if n >= cluster_min && sum_avail >= target {
            break;
        }
    }
    if clusters.is_empty() {
        return 0;
    }
    if sum_avail < target {
        return sum_avail
            .wrapping_mul(WEIGHT_UNIT)
            .wrapping_add(sum_score / clusters.len() as i64);
    }
    target.wrapping_mul(WEIGHT_UNIT).wrapping_add(sum_score / n)
}

/// Duplicated: the number of clusters with room for every replica, times 1000, plus their
/// average score.
pub fn group_score_for_duplicate(
    clusters: &[ClusterDetail<'_>],
    spec: &ResourceBindingSpec,
) -> i64 {
    let target = i64::from(spec.replicas);
    let (mut valid, mut sum) = (0i64, 0i64);
    for c in clusters.iter().filter(|c| c.available_replicas >= target) {
        valid += 1;
        sum = sum.wrapping_add(c.score);
    }
    if valid == 0 {
        return 0;
    }
    (valid * WEIGHT_UNIT).wrapping_add(sum / valid)
}

/// Go's float64 → int64 conversion as compiled for amd64 (CVTTSD2SQ): NaN and out-of-range
/// values become `i64::MIN`. Reached only with `minGroups: 0` on a region constraint, which the
/// webhook would have defaulted to 1 (see docs/compatibility.md).
fn go_f64_to_i64(v: f64) -> i64 {
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use karmada_api::policy::{
        ClusterPreferences, DynamicWeightFactor, ReplicaDivisionPreference,
        ReplicaSchedulingStrategy,
    };

    fn sc(field: SpreadFieldValue, min: i64, max: i64) -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: Some(field),
            min_groups: min,
            max_groups: max,
            ..Default::default()
        }
    }

    // karmada v1.18.2 spreadconstraint/group_clusters_test.go: Test_GroupClustersWithScore.
    #[test]
    fn group_clusters_with_score() {
        let cs = [
            topo("member1", "P1", "R1", "Z1"),
            topo("member2", "P1", "R1", "Z2"),
            topo("member3", "P2", "R1", "Z1"),
            topo("member4", "P2", "R2", "Z2"),
        ];
        let scores = [20, 40, 30, 60];
        use SpreadFieldValue::*;
        let cases: Vec<(&str, Vec<SpreadConstraint>, usize, usize, usize)> = vec![
            ("nil", vec![], 0, 0, 0),
            ("cluster", vec![sc(Cluster, 1, 1)], 0, 0, 0),
            ("zone", vec![sc(Zone, 1, 1)], 2, 0, 0),
            ("region", vec![sc(Region, 1, 1)], 0, 2, 0),
            ("provider", vec![sc(Provider, 1, 1)], 0, 0, 2),
            (
                "provider/region/zone",
                vec![sc(Provider, 1, 1), sc(Region, 1, 1), sc(Zone, 1, 1)],
                2,
                2,
                2,
            ),
        ];
        for (name, constraints, zones, regions, providers) in cases {
            let spec = ResourceBindingSpec {
                placement: Some(Placement {
                    spread_constraints: constraints,
                    ..Default::default()
                }),
                ..Default::default()
            };
            let details: Vec<_> = cs
                .iter()
                .zip(scores)
                .map(|(c, s)| detail(c.name(), s, 100, c))
                .collect();
            let info = group_clusters(details, &spec);
            assert_eq!(
                names(&info.clusters),
                ["member4", "member2", "member3", "member1"],
                "{name}"
            );
            assert_eq!(info.zones.len(), zones, "{name}");
            assert_eq!(info.regions.len(), regions, "{name}");
            assert_eq!(info.providers.len(), providers, "{name}");
        }
    }

    fn rb_spec(replicas: i32, kind: &str) -> ResourceBindingSpec {
        use ReplicaSchedulingType::*;
        let rs = match kind {
            "duplicated" => ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(Duplicated),
                ..Default::default()
            },
            "aggregated" => ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(Divided),
                replica_division_preference: Some(ReplicaDivisionPreference::Aggregated),
                weight_preference: None,
            },
            "dynamicWeight" => ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(Divided),
                replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
                weight_preference: Some(ClusterPreferences {
                    static_weight_list: vec![],
                    dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
                }),
            },
            _ => ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(Divided),
                replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
                weight_preference: Some(ClusterPreferences::default()),
            },
        };
        ResourceBindingSpec {
            replicas,
            placement: Some(Placement {
                replica_scheduling: Some(rs),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    const NAMES: [&str; 5] = ["member1", "member2", "member3", "member4", "member5"];

    fn mk<'a>(scores: [i64; 5], replicas: [i64; 5]) -> Vec<ClusterDetail<'a>> {
        (0..5)
            .map(|i| detail(NAMES[i], scores[i], replicas[i], &ANY))
            .collect()
    }

    // group_clusters_test.go: Test_CalcGroupScore.
    #[test]
    fn calc_group_score() {
        let cases = [
            (
                mk([100, 100, 0, 0, 0], [30; 5]),
                mk([100; 5], [30, 30, 30, 10, 10]),
                rb_spec(20, "duplicated"),
                0,
                true,
            ),
            (
                mk([100, 100, 0, 0, 0], [30, 30, 30, 10, 10]),
                mk([100; 5], [30, 30, 30, 10, 10]),
                rb_spec(20, "duplicated"),
                0,
                false,
            ),
            (
                mk([100, 100, 0, 0, 0], [30, 30, 30, 10, 10]),
                mk([100; 5], [10, 10, 10, 5, 5]),
                rb_spec(100, "aggregated"),
                2,
                true,
            ),
            (
                mk([100, 100, 0, 0, 0], [10, 10, 10, 10, 5]),
                mk([100; 5], [10, 10, 10, 5, 5]),
                rb_spec(100, "dynamicWeight"),
                2,
                true,
            ),
            (
                mk([100, 100, 0, 0, 0], [10, 10, 10, 5, 5]),
                mk([100; 5], [10, 10, 10, 5, 5]),
                rb_spec(100, "staticWeight"),
                2,
                false,
            ),
            (
                mk([0; 5], [100; 5]),
                mk([100; 5], [50; 5]),
                rb_spec(100, "aggregated"),
                2,
                false,
            ),
        ];
        for (i, (c1, c2, spec, min, group1_wins)) in cases.iter().enumerate() {
            let s1 = group_score(c1, spec, *min);
            let s2 = group_score(c2, spec, *min);
            assert_eq!(s1 >= s2, *group1_wins, "case {}: {s1} vs {s2}", i + 1);
        }
    }

    // group_clusters_test.go: Test_CalcGroupScoreForDuplicate.
    #[test]
    fn calc_group_score_for_duplicate() {
        let spec = ResourceBindingSpec {
            replicas: 10,
            ..Default::default()
        };
        assert_eq!(group_score_for_duplicate(&[], &spec), 0);
        let cs = [
            detail("member1", 50, 5, &ANY),
            detail("member2", 50, 5, &ANY),
        ];
        assert_eq!(group_score_for_duplicate(&cs, &spec), 0);
    }

    // worked example: A 44100, B 45000.
    #[test]
    fn worked_example_group_scores() {
        let mut spec = rb_spec(90, "aggregated");
        spec.placement.as_mut().unwrap().spread_constraints = vec![
            sc(SpreadFieldValue::Region, 2, 2),
            sc(SpreadFieldValue::Cluster, 1, 4),
        ];
        let a: Vec<_> = [12, 12, 12, 8]
            .iter()
            .enumerate()
            .map(|(i, r)| detail(NAMES[i], 100, *r, &ANY))
            .collect();
        let b: Vec<_> = [30, 20, 5]
            .iter()
            .enumerate()
            .map(|(i, r)| detail(NAMES[i], 0, *r, &ANY))
            .collect();
        assert_eq!(group_score(&a, &spec, 2), 44100);
        assert_eq!(group_score(&b, &spec, 2), 45000);
    }

    #[test]
    fn zero_min_groups_follows_amd64() {
        // ceil(90/0) = +Inf → i64::MIN on amd64; the loop stops after max(clusterMin, 0)
        // clusters and MIN*1000 wraps to 0, leaving the average score of those clusters.
        let mut spec = rb_spec(90, "aggregated");
        spec.placement.as_mut().unwrap().spread_constraints =
            vec![sc(SpreadFieldValue::Region, 0, 2)];
        let a: Vec<_> = [(100, 3), (0, 50)]
            .iter()
            .enumerate()
            .map(|(i, (s, r))| detail(NAMES[i], *s, *r, &ANY))
            .collect();
        assert_eq!(group_score(&a, &spec, 0), 100);
        spec.replicas = 0; // 0/0 = NaN, same conversion
        assert_eq!(group_score(&a, &spec, 0), 100);
    }

    /// Sort by overflow order and score only, then name (upstream's `sortClusters` without
    /// an extra comparator).
    fn sort_clusters_by_score(clusters: &mut [ClusterDetail<'_>]) {
        clusters.sort_unstable_by(|a, b| {
            a.overflow_order
                .cmp(&b.overflow_order)
                .then_with(|| b.score.cmp(&a.score))
                .then_with(|| a.name.cmp(b.name))
        });
    }

    // util_test.go: Test_sortClusters.
    #[test]
    fn sort_clusters_cases() {
        let mut v = vec![detail("b", 2, 0, &ANY), detail("a", 1, 0, &ANY)];
        sort_clusters_by_score(&mut v);
        assert_eq!(names(&v), ["b", "a"]);
        let mut v = vec![detail("b", 1, 5, &ANY), detail("a", 1, 10, &ANY)];
        sort_clusters_by_score(&mut v);
        assert_eq!(names(&v), ["a", "b"]);
        let mut v = vec![detail("a", 1, 5, &ANY), detail("b", 1, 10, &ANY)];
        sort_clusters(&mut v);
        assert_eq!(names(&v), ["b", "a"]);
        let mut v = vec![detail("a", 1, 5, &ANY), detail("b", 0, 10, &ANY)];
        v[0].overflow_order = 1;
        sort_clusters(&mut v);
        assert_eq!(names(&v), ["b", "a"]);
    }
}
