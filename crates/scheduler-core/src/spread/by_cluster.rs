//! Selection by cluster: the best `maxGroups` clusters, swapping in
//! bigger ones from the rest until their capacity covers the replicas.

use karmada_api::policy::SpreadConstraint;

use crate::detail::ClusterDetail;

use super::INVALID_REPLICAS;

/// Select from `clusters` (canonical order). `need == -1` skips the capacity check.
pub fn select<'a>(
    sc: &SpreadConstraint,
    clusters: &[ClusterDetail<'a>],
    need: i32,
) -> Result<Vec<ClusterDetail<'a>>, String> {
    let total = clusters.len();
    if (total as i64) < sc.min_groups {
        return Err(
            "the number of feasible clusters is less than spreadConstraint.MinGroups".to_string(),
        );
    }
    // A negative maxGroups (validation bypassed) would make upstream panic; treat it as 0.
    let k = total.min(usize::try_from(sc.max_groups).unwrap_or(0));
    if need == INVALID_REPLICAS {
        return Ok(clusters[..k].to_vec());
    }
    let selected = select_by_available_resource(clusters, k, need);
    if selected.is_empty() {
        return Err(format!("no enough resource when selecting {k} clusters"));
    }
    Ok(selected)
}

/// Take the first `k`; while their capacity is short, replace them from the last one backwards
/// with the rest's biggest cluster bigger than the one replaced. Empty when still short.
pub fn select_by_available_resource<'a>(
    clusters: &[ClusterDetail<'a>],
    k: usize,
    need: i32,
) -> Vec<ClusterDetail<'a>> {
    let mut ret: Vec<ClusterDetail<'a>> = clusters[..k].to_vec();
    let mut rest: Vec<ClusterDetail<'a>> = clusters[k..].to_vec();
    let enough = |v: &[ClusterDetail<'_>]| {
        v.iter()
            .map(|c| c.available_replicas)
            .fold(0i64, i64::wrapping_add)
            >= i64::from(need)
    };
    let mut i = k;
    while !enough(&ret) && i > 0 {
        i -= 1;
        if let Some(j) = max_available_above(&rest, ret[i].available_replicas) {
            std::mem::swap(&mut ret[i], &mut rest[j]);
        }
    }
    if enough(&ret) { ret } else { Vec::new() }
}

/// Index of the first cluster with the largest available replicas strictly above `floor`.
pub fn max_available_above(clusters: &[ClusterDetail<'_>], floor: i64) -> Option<usize> {
    let mut best = floor;
    let mut idx = None;
    for (i, c) in clusters.iter().enumerate() {
        if c.available_replicas > best {
            best = c.available_replicas;
            idx = Some(i);
        }
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use karmada_api::policy::SpreadFieldValue;

    fn sc(min: i64, max: i64) -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: Some(SpreadFieldValue::Cluster),
            min_groups: min,
            max_groups: max,
            ..Default::default()
        }
    }

    // worked example: A(100,10) B(100,5) C(0,50) D(0,20), 40 replicas,
    // max 2 → [A, C].
    #[test]
    fn worked_example() {
        let v = vec![
            detail("A", 100, 10, &ANY),
            detail("B", 100, 5, &ANY),
            detail("C", 0, 50, &ANY),
            detail("D", 0, 20, &ANY),
        ];
        assert_eq!(names(&select(&sc(1, 2), &v, 40).unwrap()), ["A", "C"]);
        // Capacity not checked: the first two.
        assert_eq!(names(&select(&sc(1, 2), &v, -1).unwrap()), ["A", "B"]);
        // Enough already.
        assert_eq!(names(&select(&sc(1, 2), &v, 15).unwrap()), ["A", "B"]);
        // Both replaced, last first: [A,B] → [A,C] (60) is enough for 60.
        assert_eq!(names(&select(&sc(1, 2), &v, 60).unwrap()), ["A", "C"]);
        // 70 needs C and D: B→C, then A→D.
        assert_eq!(names(&select(&sc(1, 2), &v, 70).unwrap()), ["D", "C"]);
        assert_eq!(
            select(&sc(1, 2), &v, 71).unwrap_err(),
            "no enough resource when selecting 2 clusters"
        );
        // maxGroups 0.
        assert_eq!(
            select(&sc(0, 0), &v, 1).unwrap_err(),
            "no enough resource when selecting 0 clusters"
        );
        assert!(select(&sc(0, 0), &v, -1).unwrap().is_empty());
        // maxGroups larger than the list.
        assert_eq!(select(&sc(1, 9), &v, 85).unwrap().len(), 4);
    }

    // select_clusters_by_cluster.go doc example: member1(60,40) member2(50,30) member3(40,60),
    // 2 clusters for 80 replicas → member1 and member3.
    #[test]
    fn doc_example() {
        let v = vec![
            detail("member1", 60, 40, &ANY),
            detail("member2", 50, 30, &ANY),
            detail("member3", 40, 60, &ANY),
        ];
        assert_eq!(
            names(&select_by_available_resource(&v, 2, 80)),
            ["member1", "member3"]
        );
        assert_eq!(max_available_above(&v, 30), Some(2));
        assert_eq!(max_available_above(&v, 60), None);
    }
}
