//! `ClusterLocality`: prefer the clusters the workload already runs in (score 100).

use crate::framework::{
    MAX_CLUSTER_SCORE, MIN_CLUSTER_SCORE, PluginResult, ScoreContext, ScorePlugin,
};

/// Registry name.
pub const NAME: &str = "ClusterLocality";

/// Score 100 for clusters in `spec.clusters`, 0 otherwise; no normalisation.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterLocality;

in_tree_plugin!(ClusterLocality: score);

impl ScorePlugin for ClusterLocality {
    fn score(&self, ctx: &ScoreContext<'_>) -> Result<i64, PluginResult> {
        if !ctx.targets.is_empty() && ctx.targets.contains(ctx.cluster.name()) {
            Ok(MAX_CLUSTER_SCORE)
        } else {
            Ok(MIN_CLUSTER_SCORE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Plugin;
    use crate::plugins::testutil::*;
    use karmada_api::work::ResourceBindingSpec;

    // karmada v1.18.2 plugins/clusterlocality/cluster_locality_test.go: TestClusterLocality_Score.
    #[test]
    fn score() {
        let c = cluster("cluster1");
        let spec = |t: &[&str]| ResourceBindingSpec {
            clusters: targets(t),
            ..Default::default()
        };
        assert_eq!(score_of(&ClusterLocality, &spec(&[]), &c), Ok(0));
        assert_eq!(
            score_of(&ClusterLocality, &spec(&["cluster1", "cluster2"]), &c),
            Ok(100)
        );
        assert_eq!(
            score_of(&ClusterLocality, &spec(&["cluster2", "cluster3"]), &c),
            Ok(0)
        );
        assert!(ClusterLocality.as_filter().is_none());
    }
}
