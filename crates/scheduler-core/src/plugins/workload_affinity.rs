//! `WorkloadAffinity` (gate `WorkloadAffinity`): workloads of one affinity group share clusters.
//!
//! The other bindings come from a [`WorkloadGroupIndex`] the caller puts in the filter
//! context (the daemon: its informer store plus its "assigning" cache). Without an index every
//! cluster is rejected with `ResourceBindingIndexer is nil`, exactly as upstream does when the
//! indexer is missing.

use std::cmp::Ordering;

use std::sync::Arc;

use karmada_api::work::{ResourceBinding, WorkloadAffinityGroups};

use crate::framework::{FilterContext, FilterPlugin, PluginResult, WorkloadGroupIndex};

/// Registry name.
pub const NAME: &str = "WorkloadAffinity";

/// Filter: the cluster must be in the placement of every already-placed peer of the group.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadAffinity;

in_tree_plugin!(WorkloadAffinity: filter);

impl FilterPlugin for WorkloadAffinity {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        filter_by_group(
            ctx,
            &GroupRule {
                group: |g| &g.affinity_group,
                peers: |index, group| index.by_affinity_group(group),
                peer_on_cluster_passes: true,
                reject: "ResourceBinding with the same affinity group does not target this cluster",
            },
        )
    }
}

/// How a group filter lists a group's bindings from the caller's index.
pub(crate) type PeerList =
    fn(&dyn WorkloadGroupIndex, &str) -> Result<Vec<Arc<ResourceBinding>>, String>;

/// What one of the two group filters (this one and `WorkloadAntiAffinity`) follows.
pub(crate) struct GroupRule {
    /// The binding's group name (empty: in no group).
    pub group: fn(&WorkloadAffinityGroups) -> &str,
    /// The group's bindings, from the caller's index.
    pub peers: PeerList,
    /// Whether a placed peer on the cluster lets it pass (affinity) or rejects it
    /// (anti-affinity); a placed peer elsewhere does the opposite.
    pub peer_on_cluster_passes: bool,
    /// Why a cluster is rejected.
    pub reject: &'static str,
}

/// The filter both group plugins run: a cluster the binding already targets passes, as does
/// every cluster for a binding in no such group; otherwise each placed peer of the group (same
/// namespace, not the binding itself, newest copy) decides by `rule`. Without an index every
/// cluster is rejected as upstream does.
pub(crate) fn filter_by_group(ctx: &FilterContext<'_>, rule: &GroupRule) -> PluginResult {
    let spec = ctx.spec;
    let cluster = ctx.cluster.name();
    if ctx.targets.contains(cluster) {
        return PluginResult::success();
    }
    let group = match &spec.workload_affinity_groups {
        Some(g) if !(rule.group)(g).is_empty() => (rule.group)(g),
        _ => return PluginResult::success(),
    };
    let Some(index) = ctx.workload_index else {
        return PluginResult::unschedulable("ResourceBindingIndexer is nil");
    };
    let Ok(peers) = (rule.peers)(index, group) else {
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
            || (rule.group)(groups) != group
            || peer.spec.clusters.is_empty()
            || peer.metadata.name.as_deref() == Some(me.as_str())
        {
            continue;
        }
        if peer.spec.target_contains(cluster) != rule.peer_on_cluster_passes {
            return PluginResult::unschedulable(rule.reject);
        }
    }
    PluginResult::success()
}

/// The binding name the resource detector gives a resource: `lower(name(':'→'.') + "-" + kind)`.
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", name.replace(':', "."), kind).to_lowercase()
}

pub(crate) fn namespace_of(rb: &ResourceBinding) -> &str {
    rb.metadata.namespace.as_deref().unwrap_or("")
}

/// The informer copy, or the assigning copy when its resourceVersion is greater.
pub(crate) fn newest(
    index: &dyn WorkloadGroupIndex,
    rb: &std::sync::Arc<ResourceBinding>,
) -> Result<std::sync::Arc<ResourceBinding>, PluginResult> {
    let name = rb.metadata.name.as_deref().unwrap_or("");
    let Some(assigning) = index.assigning(namespace_of(rb), name) else {
        return Ok(rb.clone());
    };
    let a = assigning.metadata.resource_version.as_deref().unwrap_or("");
    let b = rb.metadata.resource_version.as_deref().unwrap_or("");
    match compare_resource_version(a, b) {
        None => Err(PluginResult::unschedulable(
            "failed to compare resource versions for ResourceBinding",
        )),
        Some(Ordering::Greater) => Ok(assigning),
        Some(_) => Ok(rb.clone()),
    }
}

/// `resourceversion.CompareResourceVersion`: positive decimal integers without leading zeros,
/// of any length; `None` when either is malformed.
pub fn compare_resource_version(a: &str, b: &str) -> Option<Ordering> {
    let well_formed =
        |s: &str| !s.is_empty() && !s.starts_with('0') && s.bytes().all(|c| c.is_ascii_digit());
    if !well_formed(a) || !well_formed(b) {
        return None;
    }
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::*;
    use std::sync::Arc;

    fn filter_with(
        index: Option<&dyn WorkloadGroupIndex>,
        me: &ResourceBinding,
        cluster_name: &str,
    ) -> PluginResult {
        let c = cluster(cluster_name);
        let status = Default::default();
        let targets = crate::framework::TargetIndex::new(&me.spec.clusters);
        WorkloadAffinity.filter(&FilterContext {
            spec: &me.spec,
            status: &status,
            targets: &targets,
            cluster: &c,
            workload_index: index,
            prepared: None,
        })
    }

    #[test]
    fn affinity_group() {
        let me = binding("ns", "Deployment", "me", "app=a", "", &[], "1");
        let idx = MemIndex {
            bindings: vec![
                Arc::new(binding(
                    "ns",
                    "Deployment",
                    "p1",
                    "app=a",
                    "",
                    &["m1", "m2"],
                    "5",
                )),
                Arc::new(binding(
                    "ns",
                    "Deployment",
                    "p2",
                    "app=a",
                    "",
                    &["m2", "m3"],
                    "5",
                )),
                // Not placed yet, other namespace, or myself: ignored.
                Arc::new(binding("ns", "Deployment", "p3", "app=a", "", &[], "5")),
                Arc::new(binding(
                    "other",
                    "Deployment",
                    "p4",
                    "app=a",
                    "",
                    &["m9"],
                    "5",
                )),
                Arc::new(binding("ns", "Deployment", "me", "app=a", "", &["m9"], "5")),
            ],
            ..Default::default()
        };
        assert!(filter_with(Some(&idx), &me, "m2").is_success());
        let r = filter_with(Some(&idx), &me, "m1");
        assert_eq!(
            r.reasons(),
            ["ResourceBinding with the same affinity group does not target this cluster"]
        );
        assert!(!filter_with(Some(&idx), &me, "m9").is_success());

        // No index: rejected as upstream; list failure likewise.
        assert_eq!(
            filter_with(None, &me, "m2").reasons(),
            ["ResourceBindingIndexer is nil"]
        );
        let failing = MemIndex {
            fail: true,
            ..Default::default()
        };
        assert_eq!(
            filter_with(Some(&failing), &me, "m2").reasons(),
            ["failed to list ResourceBindings"]
        );

        // Already a target, or no group: always passes (even without an index).
        let mut placed = me.clone();
        placed.spec.clusters = targets(&["m1"]);
        assert!(filter_with(None, &placed, "m1").is_success());
        let mut no_group = me.clone();
        no_group.spec.workload_affinity_groups = None;
        assert!(filter_with(None, &no_group, "m1").is_success());
    }

    #[test]
    fn assigning_copy_with_newer_version_wins() {
        let me = binding("ns", "Deployment", "me", "app=a", "", &[], "1");
        let mut idx = MemIndex {
            bindings: vec![Arc::new(binding(
                "ns",
                "Deployment",
                "p1",
                "app=a",
                "",
                &["m1"],
                "5",
            ))],
            ..Default::default()
        };
        let key = ("ns".to_string(), binding_name("Deployment", "p1"));
        idx.assigning.insert(
            key.clone(),
            Arc::new(binding(
                "ns",
                "Deployment",
                "p1",
                "app=a",
                "",
                &["m2"],
                "10",
            )),
        );
        assert!(filter_with(Some(&idx), &me, "m2").is_success());
        assert!(!filter_with(Some(&idx), &me, "m1").is_success());
        idx.assigning.insert(
            key.clone(),
            Arc::new(binding("ns", "Deployment", "p1", "app=a", "", &["m2"], "4")),
        );
        assert!(filter_with(Some(&idx), &me, "m1").is_success());
        idx.assigning.insert(
            key,
            Arc::new(binding("ns", "Deployment", "p1", "app=a", "", &["m2"], "x")),
        );
        assert_eq!(
            filter_with(Some(&idx), &me, "m1").reasons(),
            ["failed to compare resource versions for ResourceBinding"]
        );
    }

    #[test]
    fn names_and_versions() {
        assert_eq!(
            binding_name("ClusterRole", "system:Admin"),
            "system.admin-clusterrole"
        );
        assert_eq!(compare_resource_version("100", "200"), Some(Ordering::Less));
        assert_eq!(
            compare_resource_version("1000", "200"),
            Some(Ordering::Greater)
        );
        assert_eq!(compare_resource_version("7", "7"), Some(Ordering::Equal));
        assert_eq!(compare_resource_version("0", "7"), None);
        assert_eq!(compare_resource_version("07", "7"), None);
        assert_eq!(compare_resource_version("", "7"), None);
        assert_eq!(compare_resource_version("7a", "7"), None);
    }
}
