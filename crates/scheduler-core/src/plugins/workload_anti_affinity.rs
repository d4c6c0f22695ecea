//! `WorkloadAntiAffinity` (gate `WorkloadAffinity`): workloads of one anti-affinity group
//! avoid each other's clusters. Peers come from the caller's [`WorkloadGroupIndex`], as for
//! [`super::workload_affinity`].

use crate::framework::{FilterContext, FilterPlugin, PluginResult};
use crate::plugins::workload_affinity::{GroupRule, filter_by_group};

/// Registry name.
pub const NAME: &str = "WorkloadAntiAffinity";

/// Filter: no peer of the anti-affinity group may already be placed on the cluster.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadAntiAffinity;

in_tree_plugin!(WorkloadAntiAffinity: filter);

impl FilterPlugin for WorkloadAntiAffinity {
    /// A peer without clusters holds none, so skipping unplaced peers (as the affinity filter
    /// does) changes nothing here.
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        filter_by_group(
            ctx,
            &GroupRule {
                group: |g| &g.anti_affinity_group,
                peers: |index, group| index.by_anti_affinity_group(group),
                peer_on_cluster_passes: false,
                reject: "cluster already has workload with the same anti-affinity group",
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::WorkloadGroupIndex;
    use crate::plugins::testutil::{MemIndex, binding, cluster};
    use std::sync::Arc;

    #[test]
    fn anti_affinity_group() {
        let me = binding("ns", "Deployment", "me", "", "db", &[], "1");
        let idx = MemIndex {
            bindings: vec![
                Arc::new(binding("ns", "Deployment", "p1", "", "db", &["m1"], "5")),
                Arc::new(binding("other", "Deployment", "p2", "", "db", &["m2"], "5")),
                Arc::new(binding("ns", "Deployment", "me", "", "db", &["m3"], "5")),
            ],
            ..Default::default()
        };
        let run = |index: Option<&dyn WorkloadGroupIndex>,
                   spec: &karmada_api::work::ResourceBindingSpec,
                   c: &str| {
            let c = cluster(c);
            let status = Default::default();
            let targets = crate::framework::TargetIndex::new(&spec.clusters);
            WorkloadAntiAffinity.filter(&FilterContext {
                spec,
                status: &status,
                targets: &targets,
                cluster: &c,
                workload_index: index,
                prepared: None,
            })
        };
        assert_eq!(
            run(Some(&idx), &me.spec, "m1").reasons(),
            ["cluster already has workload with the same anti-affinity group"]
        );
        assert!(run(Some(&idx), &me.spec, "m2").is_success());
        assert!(run(Some(&idx), &me.spec, "m3").is_success());
        assert!(run(Some(&idx), &me.spec, "m4").is_success());
        assert_eq!(
            run(None, &me.spec, "m4").reasons(),
            ["ResourceBindingIndexer is nil"]
        );
        let mut placed = me.spec.clone();
        placed.clusters = vec![karmada_api::work::TargetCluster::new("m1", 1)];
        assert!(run(Some(&idx), &placed, "m1").is_success());
    }
}
