//! `ClusterEviction`: a cluster the workload is being evicted from is not a candidate.

use crate::framework::{FilterContext, FilterPlugin, PluginResult};

/// Registry name.
pub const NAME: &str = "ClusterEviction";
/// The reason a cluster under eviction is rejected with.
pub const REASON: &str = "cluster(s) is in the process of eviction";

/// Filter on `spec.gracefulEvictionTasks[].fromCluster`, whatever the purge mode; not
/// bypassed for clusters already in `spec.clusters`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterEviction;

in_tree_plugin!(ClusterEviction: filter);

impl FilterPlugin for ClusterEviction {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        if ctx
            .spec
            .cluster_in_graceful_eviction_tasks(ctx.cluster.name())
        {
            PluginResult::unschedulable(REASON)
        } else {
            PluginResult::success()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::*;
    use karmada_api::work::{GracefulEvictionTask, ResourceBindingSpec};

    fn evicting(from: &[&str]) -> ResourceBindingSpec {
        ResourceBindingSpec {
            graceful_eviction_tasks: from
                .iter()
                .map(|f| GracefulEvictionTask {
                    from_cluster: f.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    // karmada v1.18.2 plugins/clustereviction/cluster_eviction_test.go: TestClusterEviction_Filter.
    #[test]
    fn filter() {
        let c = cluster("cluster1");
        let r = run(&ClusterEviction, &evicting(&["cluster1"]), &c);
        assert_eq!(r.code(), Code::Unschedulable);
        assert_eq!(r.as_error().unwrap(), REASON);
        assert_eq!(
            run(&ClusterEviction, &evicting(&["cluster2"]), &c).code(),
            Code::Success
        );
        assert_eq!(
            run(&ClusterEviction, &evicting(&[]), &c).code(),
            Code::Success
        );
        // Not bypassed when the cluster is a current target.
        let mut s = evicting(&["cluster1"]);
        s.clusters = targets(&["cluster1"]);
        assert_eq!(run(&ClusterEviction, &s, &c).code(), Code::Unschedulable);
    }
}
