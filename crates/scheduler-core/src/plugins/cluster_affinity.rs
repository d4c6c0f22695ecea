//! `ClusterAffinity`: the cluster must match the placement's affinity (filter; score 0).

use crate::framework::{
    FilterContext, FilterPlugin, MIN_CLUSTER_SCORE, PluginResult, ScoreContext, ScorePlugin,
};
pub use crate::predicates::{Affinities, effective_affinities};
use crate::selector::cluster_matches;

/// Registry name.
pub const NAME: &str = "ClusterAffinity";
/// The reason a cluster outside the affinity is rejected with.
pub const REASON: &str = "cluster(s) did not match the placement cluster affinity constraint";

/// Filter on `placement.clusterAffinity`, or on the observed `clusterAffinities` term (plus its
/// overflow tiers for workloads). Not bypassed for clusters already in `spec.clusters`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterAffinity;

in_tree_plugin!(ClusterAffinity: filter, score);

impl FilterPlugin for ClusterAffinity {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        let matches = match ctx.prepared {
            Some(p) => p.matches_affinity(),
            None => {
                let affinities = effective_affinities(ctx.placement(), ctx.spec, ctx.status);
                affinities.is_empty() || affinities.iter().any(|a| cluster_matches(ctx.cluster, a))
            }
        };
        if matches {
            PluginResult::success()
        } else {
            PluginResult::unschedulable(REASON)
        }
    }
}

impl ScorePlugin for ClusterAffinity {
    fn score(&self, _ctx: &ScoreContext<'_>) -> Result<i64, PluginResult> {
        Ok(MIN_CLUSTER_SCORE)
    }

    /// The reference's plugin has a (no-op) normalisation, timed in its metrics.
    fn has_score_extensions(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::*;
    use karmada_api::policy::{
        ClusterAffinity as Affinity, ClusterAffinityTerm, OverflowClusterAffinity, Placement,
    };
    use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};

    fn names(n: &[&str]) -> Affinity {
        Affinity {
            cluster_names: n.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn spec(p: Placement) -> ResourceBindingSpec {
        ResourceBindingSpec {
            placement: Some(p),
            ..Default::default()
        }
    }

    // karmada v1.18.2 plugins/clusteraffinity/cluster_affinity_test.go: TestClusterAffinity_Filter.
    #[test]
    fn filter() {
        let c = cluster("cluster1");
        let s = spec(Placement {
            cluster_affinity: Some(names(&["cluster1"])),
            ..Default::default()
        });
        assert_eq!(run(&ClusterAffinity, &s, &c).code(), Code::Success);

        let s = spec(Placement {
            cluster_affinity: Some(names(&["cluster2"])),
            ..Default::default()
        });
        let r = run(&ClusterAffinity, &s, &c);
        assert_eq!(r.code(), Code::Unschedulable);
        assert_eq!(r.as_error().unwrap(), REASON);

        let s = spec(Placement {
            cluster_affinities: Some(vec![ClusterAffinityTerm {
                affinity_name: "affinity1".into(),
                affinity: names(&["cluster1"]),
                overflow_affinities: None,
            }]),
            ..Default::default()
        });
        let st = ResourceBindingStatus {
            scheduler_observed_affinity_name: "affinity1".into(),
            ..Default::default()
        };
        assert_eq!(
            run_with_status(&ClusterAffinity, &s, &st, &c).code(),
            Code::Success
        );

        assert_eq!(
            run(&ClusterAffinity, &spec(Placement::default()), &c).code(),
            Code::Success
        );
    }

    // TestClusterAffinity_Score / _NormalizeScore.
    #[test]
    fn score_is_zero() {
        let s = ResourceBindingSpec::default();
        assert_eq!(score_of(&ClusterAffinity, &s, &cluster("c")), Ok(0));
        assert!(ClusterAffinity.normalize_score(&mut []).is_success());
    }

    #[test]
    fn observed_term_and_overflow() {
        let term = ClusterAffinityTerm {
            affinity_name: "t2".into(),
            affinity: names(&["a"]),
            overflow_affinities: Some(vec![OverflowClusterAffinity {
                affinity_name: "o".into(),
                affinity: names(&["b"]),
            }]),
        };
        let p = Placement {
            cluster_affinities: Some(vec![
                ClusterAffinityTerm {
                    affinity_name: "t1".into(),
                    affinity: names(&["z"]),
                    overflow_affinities: None,
                },
                term,
            ]),
            ..Default::default()
        };
        let mut s = spec(p);
        let st = |n: &str| ResourceBindingStatus {
            scheduler_observed_affinity_name: n.into(),
            ..Default::default()
        };
        // Non-workload: overflow tiers are not part of the affinity.
        assert!(run_with_status(&ClusterAffinity, &s, &st("t2"), &cluster("a")).is_success());
        assert!(!run_with_status(&ClusterAffinity, &s, &st("t2"), &cluster("b")).is_success());
        s.replicas = 2;
        assert!(run_with_status(&ClusterAffinity, &s, &st("t2"), &cluster("b")).is_success());
        assert!(!run_with_status(&ClusterAffinity, &s, &st("t2"), &cluster("z")).is_success());
        // No term with the observed name: no constraint.
        assert!(run_with_status(&ClusterAffinity, &s, &st("nope"), &cluster("q")).is_success());
        assert!(run_with_status(&ClusterAffinity, &s, &st(""), &cluster("q")).is_success());
        // Not bypassed for existing targets.
        s.clusters = targets(&["z"]);
        assert!(!run_with_status(&ClusterAffinity, &s, &st("t2"), &cluster("z")).is_success());
    }
}
