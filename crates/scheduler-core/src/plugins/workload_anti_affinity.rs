//! `WorkloadAntiAffinity` (gate `WorkloadAffinity`): workloads of one anti-affinity group
//! avoid each other's clusters. Peers come from the caller's [`WorkloadGroupIndex`], as for
//! [`super::workload_affinity`].

use crate::framework::{FilterContext, FilterPlugin, Plugin, PluginResult, WorkloadGroupIndex};
use crate::plugins::workload_affinity::{binding_name, namespace_of, newest};

/// Registry name.
pub const NAME: &str = "WorkloadAntiAffinity";

/// Filter: no peer of the anti-affinity group may already be placed on the cluster.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadAntiAffinity;

impl Plugin for WorkloadAntiAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for WorkloadAntiAffinity {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        let spec = ctx.spec;
        let cluster = ctx.cluster.name();
        if ctx.targets.contains(cluster) {
            return PluginResult::success();
        }
        let group = match &spec.workload_affinity_groups {
            Some(g) if !g.anti_affinity_group.is_empty() => g.anti_affinity_group.as_str(),
            _ => return PluginResult::success(),
        };
        let Some(index): Option<&dyn WorkloadGroupIndex> = ctx.workload_index else {
            return PluginResult::unschedulable("ResourceBindingIndexer is nil");
        };
        let Ok(peers) = index.by_anti_affinity_group(group) else {
            return PluginResult::unschedulable("failed to list ResourceBindings");
        };
        let me = binding_name(&spec.resource.kind, &spec.resource.name);
        for rb in &peers {
            let peer = match newest(index, rb) {
                Ok(p) => p,
                Err(r) => return r,
            };
            let Some(groups) = &peer.spec.workload_affinity_groups else {
                continue;
            };
            if namespace_of(&peer) != spec.resource.namespace
                || groups.anti_affinity_group != group
                || peer.metadata.name.as_deref() == Some(me.as_str())
            {
                continue;
            }
            if peer.spec.target_contains(cluster) {
                return PluginResult::unschedulable(
                    "cluster already has workload with the same anti-affinity group",
                );
            }
        }
        PluginResult::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::cluster;
    use crate::plugins::workload_affinity::tests::{MemIndex, binding};
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
