//! Selection by region: choose regions by [`select_groups`], take each
//! region's best cluster, then fill up to the cluster constraint's `maxGroups` from the rest.

use karmada_api::policy::SpreadConstraint;

use crate::detail::ClusterDetail;

use super::Selection;
use super::group::{GroupClustersInfo, canonical_cmp};
use super::select_groups::{Group, select_groups};

/// Select with a region constraint and the (possibly zero-valued) cluster constraint. No
/// capacity check happens on this path.
pub fn select<'a>(
    region: &SpreadConstraint,
    cluster: &SpreadConstraint,
    info: &GroupClustersInfo<'a>,
) -> Result<Selection<'a>, String> {
    if (info.regions.len() as i64) < region.min_groups {
        return Err(
            "the number of feasible region is less than spreadConstraint.MinGroups".to_string(),
        );
    }
    let groups: Vec<Group> = info
        .regions
        .values()
        .map(|r| Group {
            name: r.name.clone(),
            value: r.clusters.len() as i64,
            weight: r.score,
        })
        .collect();
    let chosen = select_groups(
        groups,
        region.min_groups,
        region.max_groups,
        cluster.min_groups,
    );
    if chosen.is_empty() {
        return Err(
            "the number of clusters is less than the cluster spreadConstraint.MinGroups"
                .to_string(),
        );
    }
    let mut selected: Vec<ClusterDetail<'a>> = Vec::new();
    let mut pool: Vec<ClusterDetail<'a>> = Vec::new();
    for g in &chosen {
        let Some(r) = info.regions.get(&g.name) else {
            continue;
        };
        let Some((head, tail)) = r.clusters.split_first() else {
            continue;
        };
        selected.push(head.clone());
        pool.extend_from_slice(tail);
    }
    let max = usize::try_from(cluster.max_groups).unwrap_or(0);
    let k = (pool.len() + selected.len()).min(max);
    if k > selected.len() {
        pool.sort_unstable_by(canonical_cmp);
        let rest = k - selected.len();
        selected.extend(pool.into_iter().take(rest));
    }
    Ok(Selection {
        clusters: selected,
        regions: chosen.into_iter().map(|g| g.name).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::group::GroupInfo;
    use super::super::testutil::*;
    use super::*;
    use karmada_api::cluster::Cluster;
    use karmada_api::policy::SpreadFieldValue;

    fn sc(field: SpreadFieldValue, min: i64, max: i64) -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: Some(field),
            min_groups: min,
            max_groups: max,
            ..Default::default()
        }
    }

    /// `(region, [(cluster, score, available)])`.
    type Regions<'a> = [(&'a str, &'a [(&'a str, i64, i64)])];

    struct World {
        clusters: Vec<(String, String, Cluster, i64, i64)>,
    }

    impl World {
        /// (region, region score, [(name, score, available)])
        fn new(regions: &Regions<'_>) -> Self {
            let mut clusters = Vec::new();
            for (r, members) in regions {
                for (n, s, a) in *members {
                    clusters.push((r.to_string(), n.to_string(), topo(n, "P1", r, "Z1"), *s, *a));
                }
            }
            World { clusters }
        }

        fn info(&self, scores: &[(&str, i64)]) -> GroupClustersInfo<'_> {
            let mut info = GroupClustersInfo::default();
            for (region, name, c, s, a) in &self.clusters {
                let g = info
                    .regions
                    .entry(region.clone())
                    .or_insert_with(|| GroupInfo {
                        name: region.clone(),
                        score: scores
                            .iter()
                            .find(|(r, _)| r == region)
                            .map_or(0, |(_, s)| *s),
                        ..Default::default()
                    });
                g.clusters.push(detail(name, *s, *a, c));
            }
            info
        }
    }

    fn run(
        w: &World,
        scores: &[(&str, i64)],
        region: (i64, i64),
        cluster: (i64, i64),
    ) -> Result<Vec<String>, String> {
        let info = w.info(scores);
        select(
            &sc(SpreadFieldValue::Region, region.0, region.1),
            &sc(SpreadFieldValue::Cluster, cluster.0, cluster.1),
            &info,
        )
        .map(|s| s.clusters.iter().map(|c| c.name.to_string()).collect())
    }

    // karmada v1.18.2 spreadconstraint/select_clusters_by_region_test.go: Test_selectBestClustersByRegion.
    #[test]
    fn upstream_cases() {
        let two = World::new(&[
            ("R1", &[("member1", 100, 40), ("member2", 80, 40)]),
            (
                "R2",
                &[
                    ("member3", 80, 40),
                    ("member4", 80, 40),
                    ("member5", 60, 40),
                ],
            ),
        ]);
        let s = [("R1", 100), ("R2", 80)];
        assert_eq!(
            run(&two, &s, (1, 1), (2, 2)).unwrap(),
            ["member1", "member2"],
            "higher score"
        );
        assert_eq!(
            run(&two, &s, (1, 1), (3, 3)).unwrap(),
            ["member3", "member4", "member5"],
            "enough clusters"
        );
        assert!(run(&two, &s, (3, 3), (3, 3)).is_err(), "no enough region");
        let two_b = World::new(&[
            ("R1", &[("member1", 100, 40), ("member2", 80, 60)]),
            (
                "R2",
                &[
                    ("member3", 80, 40),
                    ("member4", 80, 40),
                    ("member5", 60, 40),
                ],
            ),
        ]);
        assert_eq!(
            run(&two_b, &s, (1, 1), (4, 4)).unwrap_err(),
            "the number of clusters is less than the cluster spreadConstraint.MinGroups",
            "no enough clusters"
        );
        let one = World::new(&[("R1", &[("member1", 100, 40), ("member2", 80, 20)])]);
        assert!(
            run(&one, &[("R1", 100)], (1, 1), (3, 4)).is_err(),
            "no more regions to replace"
        );

        let four = World::new(&[
            ("R1", &[("member1", 90, 40)]),
            (
                "R2",
                &[
                    ("member2", 70, 40),
                    ("member3", 60, 40),
                    ("member4", 30, 40),
                ],
            ),
            ("R3", &[("member5", 80, 40), ("member6", 50, 60)]),
            (
                "R4",
                &[
                    ("member7", 50, 50),
                    ("member8", 40, 50),
                    ("member9", 10, 50),
                    ("member10", 0, 50),
                ],
            ),
        ]);
        assert_eq!(
            run(
                &four,
                &[("R1", 90), ("R2", 70), ("R3", 80), ("R4", 50)],
                (2, 2),
                (4, 5)
            )
            .unwrap(),
            ["member1", "member2", "member3", "member4"],
            "enough clusters and higher score"
        );
        let five = World::new(&[
            ("R1", &[("member1", 70, 40)]),
            (
                "R2",
                &[
                    ("member2", 40, 40),
                    ("member3", 40, 40),
                    ("member4", 40, 40),
                ],
            ),
            ("R3", &[("member5", 60, 40), ("member6", 50, 60)]),
            ("R4", &[("member7", 70, 100)]),
            ("R5", &[("member8", 50, 50)]),
        ]);
        assert_eq!(
            run(
                &five,
                &[("R1", 70), ("R2", 40), ("R3", 60), ("R4", 70), ("R5", 50)],
                (1, 3),
                (6, 8)
            )
            .unwrap(),
            [
                "member1", "member5", "member2", "member6", "member3", "member4"
            ],
            "more than minGroups regions"
        );
    }

    #[test]
    fn error_texts() {
        let two = World::new(&[
            ("R1", &[("member1", 100, 40)]),
            ("R2", &[("member3", 80, 40)]),
        ]);
        assert_eq!(
            run(&two, &[], (3, 3), (1, 1)).unwrap_err(),
            "the number of feasible region is less than spreadConstraint.MinGroups"
        );
        // A cluster maxGroups below the region count still yields one cluster per region.
        assert_eq!(
            run(&two, &[("R1", 5), ("R2", 1)], (2, 2), (1, 1)).unwrap(),
            ["member1", "member3"]
        );
    }
}
