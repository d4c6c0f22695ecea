//! The in-tree plugins of karmada v1.18.2, one file each, and the registry that lists them.
//!
//! The registry's declaration order is the order filters run in (see [`crate::framework`]).

/// The `impl Plugin` of an in-tree plugin: the module's `NAME` and the extensions it has,
/// e.g. `in_tree_plugin!(ClusterAffinity: filter, score);`.
macro_rules! in_tree_plugin {
    ($ty:ty: $($extension:ident),+) => {
        impl $crate::framework::Plugin for $ty {
            fn name(&self) -> &'static str {
                NAME
            }
            $(in_tree_plugin!(@$extension);)+
        }
    };
    (@filter) => {
        fn as_filter(&self) -> Option<&dyn $crate::framework::FilterPlugin> {
            Some(self)
        }
    };
    (@score) => {
        fn as_score(&self) -> Option<&dyn $crate::framework::ScorePlugin> {
            Some(self)
        }
    };
}

pub mod api_enablement;
pub mod cluster_affinity;
pub mod cluster_eviction;
pub mod cluster_locality;
pub mod spread_constraint;
pub mod taint_toleration;
pub mod workload_affinity;
pub mod workload_anti_affinity;

use std::sync::Arc;

use crate::features::FeatureGates;
use crate::framework::{Plugin, Registry};

fn factory<P: Plugin + Default + 'static>() -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(P::default()))
}

type Factory = fn() -> Result<Arc<dyn Plugin>, String>;

/// Every in-tree plugin, in the fixed order: APIEnablement, TaintToleration, ClusterAffinity,
/// SpreadConstraint, ClusterLocality, ClusterEviction, then, with the `WorkloadAffinity` gate,
/// WorkloadAntiAffinity and WorkloadAffinity.
pub fn in_tree_registry(gates: &FeatureGates) -> Registry {
    use self::{
        api_enablement::ApiEnablement, cluster_affinity::ClusterAffinity,
        cluster_eviction::ClusterEviction, cluster_locality::ClusterLocality,
        spread_constraint::SpreadConstraint, taint_toleration::TaintToleration,
        workload_affinity::WorkloadAffinity, workload_anti_affinity::WorkloadAntiAffinity,
    };
    let plugins: [(&str, Factory); 8] = [
        (api_enablement::NAME, factory::<ApiEnablement>),
        (taint_toleration::NAME, factory::<TaintToleration>),
        (cluster_affinity::NAME, factory::<ClusterAffinity>),
        (spread_constraint::NAME, factory::<SpreadConstraint>),
        (cluster_locality::NAME, factory::<ClusterLocality>),
        (cluster_eviction::NAME, factory::<ClusterEviction>),
        (
            workload_anti_affinity::NAME,
            factory::<WorkloadAntiAffinity>,
        ),
        (workload_affinity::NAME, factory::<WorkloadAffinity>),
    ];
    // The last two only with the gate.
    let n = if gates.workload_affinity() { 8 } else { 6 };
    let mut r = Registry::new();
    for &(name, f) in &plugins[..n] {
        r.register(name, f)
            .expect("in-tree plugin names are unique");
    }
    r
}

#[cfg(test)]
mod testutil {
    //! Builders shared by the plugin tests.
    use karmada_api::cluster::{ApiEnablement, ApiResource, Cluster, ClusterSpec, ClusterStatus};
    use karmada_api::work::{
        ObjectReference, ResourceBinding, ResourceBindingSpec, ResourceBindingStatus,
        TargetCluster, WorkloadAffinityGroups,
    };
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::workload_affinity::binding_name;
    use crate::framework::{
        FilterContext, FilterPlugin, PluginResult, ScoreContext, ScorePlugin, TargetIndex,
        WorkloadGroupIndex,
    };
    use crate::prepared::Prepared;
    use crate::snapshot::Snapshot;

    pub fn cluster(name: &str) -> Cluster {
        Cluster::new(name, ClusterSpec::default())
    }

    pub fn with_apis(mut c: Cluster, gv: &str, kinds: &[&str]) -> Cluster {
        let status = c.status.get_or_insert_with(ClusterStatus::default);
        status.api_enablements.push(ApiEnablement {
            group_version: gv.to_string(),
            resources: kinds
                .iter()
                .map(|k| ApiResource {
                    name: String::new(),
                    kind: k.to_string(),
                })
                .collect(),
        });
        c
    }

    pub fn resource(api_version: &str, kind: &str) -> ObjectReference {
        ObjectReference {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name: "w".to_string(),
            ..Default::default()
        }
    }

    pub fn targets(names: &[&str]) -> Vec<TargetCluster> {
        names.iter().map(|n| TargetCluster::new(*n, 0)).collect()
    }

    pub fn run(
        p: &dyn FilterPlugin,
        spec: &ResourceBindingSpec,
        cluster: &Cluster,
    ) -> PluginResult {
        run_with_status(p, spec, &ResourceBindingStatus::default(), cluster)
    }

    pub fn run_with_status(
        p: &dyn FilterPlugin,
        spec: &ResourceBindingSpec,
        status: &ResourceBindingStatus,
        cluster: &Cluster,
    ) -> PluginResult {
        let targets = TargetIndex::new(&spec.clusters);
        let ctx = FilterContext {
            spec,
            status,
            targets: &targets,
            cluster,
            workload_index: None,
            prepared: None,
        };
        let direct = p.filter(&ctx);
        // The prepared answers (over a snapshot of this one cluster) give the same verdict.
        let snapshot = Snapshot::from_clusters([cluster.clone()]);
        let prepared = Prepared::new(&snapshot, spec, status);
        let via_prepared = p.filter(&FilterContext {
            prepared: Some(prepared.at(0)),
            ..ctx
        });
        assert_eq!(direct, via_prepared, "prepared path disagrees");
        direct
    }

    pub fn score_of(
        p: &dyn ScorePlugin,
        spec: &ResourceBindingSpec,
        cluster: &Cluster,
    ) -> Result<i64, PluginResult> {
        let targets = TargetIndex::new(&spec.clusters);
        p.score(&ScoreContext {
            spec,
            targets: &targets,
            cluster,
        })
    }

    /// An in-memory index for the workload (anti-)affinity tests.
    #[derive(Default)]
    pub struct MemIndex {
        pub bindings: Vec<Arc<ResourceBinding>>,
        pub assigning: BTreeMap<(String, String), Arc<ResourceBinding>>,
        pub fail: bool,
    }

    impl MemIndex {
        fn in_group(
            &self,
            side: fn(&WorkloadAffinityGroups) -> &str,
            group: &str,
        ) -> Result<Vec<Arc<ResourceBinding>>, String> {
            if self.fail {
                return Err("boom".into());
            }
            let member = |b: &&Arc<ResourceBinding>| {
                let groups = b.spec.workload_affinity_groups.as_ref();
                groups.is_some_and(|g| side(g) == group)
            };
            Ok(self.bindings.iter().filter(member).cloned().collect())
        }
    }

    impl WorkloadGroupIndex for MemIndex {
        fn by_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String> {
            self.in_group(|g| &g.affinity_group, group)
        }
        fn by_anti_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String> {
            self.in_group(|g| &g.anti_affinity_group, group)
        }
        fn assigning(&self, namespace: &str, name: &str) -> Option<Arc<ResourceBinding>> {
            self.assigning
                .get(&(namespace.to_string(), name.to_string()))
                .cloned()
        }
    }

    pub fn binding(
        ns: &str,
        kind: &str,
        name: &str,
        aff: &str,
        anti: &str,
        on: &[&str],
        rv: &str,
    ) -> ResourceBinding {
        let spec = ResourceBindingSpec {
            resource: ObjectReference {
                api_version: "apps/v1".into(),
                kind: kind.into(),
                namespace: ns.into(),
                name: name.into(),
                ..Default::default()
            },
            clusters: targets(on),
            workload_affinity_groups: Some(WorkloadAffinityGroups {
                affinity_group: aff.into(),
                anti_affinity_group: anti.into(),
            }),
            ..Default::default()
        };
        let mut rb = ResourceBinding::new(&binding_name(kind, name), spec);
        rb.metadata.namespace = Some(ns.into());
        rb.metadata.resource_version = Some(rv.into());
        rb
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Framework;

    #[test]
    fn registry_and_fixed_filter_order() {
        let r = in_tree_registry(&FeatureGates::new());
        assert_eq!(
            r.names().collect::<Vec<_>>(),
            [
                "APIEnablement",
                "TaintToleration",
                "ClusterAffinity",
                "SpreadConstraint",
                "ClusterLocality",
                "ClusterEviction"
            ]
        );
        let fw = Framework::new(&r).unwrap();
        assert_eq!(
            fw.filter_plugin_names(),
            [
                "APIEnablement",
                "TaintToleration",
                "ClusterAffinity",
                "SpreadConstraint",
                "ClusterEviction"
            ]
        );
        assert_eq!(
            fw.score_plugin_names(),
            ["ClusterAffinity", "ClusterLocality"]
        );

        let gated =
            in_tree_registry(&FeatureGates::new().with(crate::features::WORKLOAD_AFFINITY, true));
        let fw = Framework::new(&gated).unwrap();
        assert_eq!(
            fw.filter_plugin_names(),
            [
                "APIEnablement",
                "TaintToleration",
                "ClusterAffinity",
                "SpreadConstraint",
                "ClusterEviction",
                "WorkloadAntiAffinity",
                "WorkloadAffinity"
            ]
        );
    }
}
