//! The plugin framework: registry, `--plugins` resolution, filter and score extension points.
//!
//! Mirrors karmada v1.18.2 `pkg/scheduler/framework` and `framework/runtime`: plugins are built
//! from a name → factory registry filtered by `--plugins`; filter plugins run in a fixed order and
//! the first failure wins; score plugins are summed with weight 1. One difference is deliberate:
//! upstream orders plugins by Go map iteration (random per process), which changes which reason a
//! cluster failing several filters reports. Here the order is the registry's declaration order
//! (see `docs/compatibility.md`).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::observe::{ExtensionPoint, FrameworkObserver};
pub use crate::predicates::placement_of;
pub use crate::status::Code;

use karmada_api::cluster::Cluster;
use karmada_api::policy::Placement;
use karmada_api::work::{
    ResourceBinding, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};

/// Lowest score a score plugin returns.
pub const MIN_CLUSTER_SCORE: i64 = 0;
/// Highest score a score plugin returns.
pub const MAX_CLUSTER_SCORE: i64 = 100;

/// The outcome of one plugin on one cluster: a code and the reasons behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginResult {
    code: Code,
    reasons: Vec<String>,
}

impl PluginResult {
    /// A success; allocation free, so that the hot filter path stays cheap.
    pub fn success() -> Self {
        Self {
            code: Code::Success,
            reasons: Vec::new(),
        }
    }

    /// An `Unschedulable` result with one reason (all in-tree filters use exactly one).
    pub fn unschedulable(reason: impl Into<String>) -> Self {
        Self {
            code: Code::Unschedulable,
            reasons: vec![reason.into()],
        }
    }

    /// A result with any code and reasons.
    pub fn new(code: Code, reasons: Vec<String>) -> Self {
        Self { code, reasons }
    }

    /// A plugin error carrying an error text.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            code: Code::Error,
            reasons: vec![text.into()],
        }
    }

    /// The code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The reasons, in the order the plugin gave them.
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// Whether the code is `Success`.
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    /// The reference's `AsError()` text: `None` on success; the reasons joined by `","` for an
    /// `Error` (the reference stores that joined text as the error), else joined by `", "`.
    pub fn as_error(&self) -> Option<String> {
        match self.code {
            Code::Success => None,
            Code::Error => Some(self.reasons.join(",")),
            Code::Unschedulable => Some(self.reasons.join(", ")),
        }
    }
}

/// Access to other ResourceBindings for the workload (anti-)affinity filters.
///
/// The daemon implements it over its informer store (indexed by
/// `spec.workloadAffinityGroups.affinityGroup` / `.antiAffinityGroup`) and its cache of bindings
/// whose new placement has been written but not yet observed back.
pub trait WorkloadGroupIndex: Send + Sync {
    /// ResourceBindings of every namespace whose affinity group equals `group`.
    fn by_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String>;
    /// ResourceBindings of every namespace whose anti-affinity group equals `group`.
    fn by_anti_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String>;
    /// The copy of `namespace/name` the scheduler is currently assigning, if any.
    fn assigning(&self, namespace: &str, name: &str) -> Option<Arc<ResourceBinding>>;
}

/// `spec.clusters` (the previous result) looked up by name in constant time.
///
/// Upstream scans the list for every cluster and plugin (`TargetContains`), which is quadratic
/// for a workload already spread over thousands of clusters; the answers are the same.
#[derive(Clone, Debug, Default)]
pub struct TargetIndex<'a> {
    first: HashMap<&'a str, i32>,
}

impl<'a> TargetIndex<'a> {
    /// Index a `spec.clusters` list; the first entry of a name wins, as in
    /// `AssignedReplicasForCluster`.
    pub fn new(clusters: &'a [TargetCluster]) -> Self {
        let mut first = HashMap::with_capacity(clusters.len());
        for t in clusters {
            first.entry(t.name.as_str()).or_insert(t.replicas);
        }
        Self { first }
    }

    /// `TargetContains`.
    pub fn contains(&self, name: &str) -> bool {
        self.first.contains_key(name)
    }

    /// `AssignedReplicasForCluster`: the first entry's replicas, else 0.
    pub fn replicas(&self, name: &str) -> i32 {
        self.first.get(name).copied().unwrap_or(0)
    }

    /// Whether `spec.clusters` is empty.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

/// Everything a filter plugin may look at for one cluster.
#[derive(Clone, Copy)]
pub struct FilterContext<'a> {
    /// The binding's spec (its `clusters` is the previous result).
    pub spec: &'a ResourceBindingSpec,
    /// The binding's status; `schedulerObservingAffinityName` selects the affinity term.
    pub status: &'a ResourceBindingStatus,
    /// `spec.clusters` indexed by name.
    pub targets: &'a TargetIndex<'a>,
    /// The cluster under test.
    pub cluster: &'a Cluster,
    /// Other bindings, for the workload-affinity plugins; `None` when not provided.
    pub workload_index: Option<&'a dyn WorkloadGroupIndex>,
    /// Answers about this cluster prepared for the whole pass ([`crate::prepared`]); `None`
    /// makes the plugins work them out from `cluster` (same verdicts).
    pub prepared: Option<crate::prepared::PreparedRef<'a>>,
}

impl<'a> FilterContext<'a> {
    /// `spec.placement`, or an empty placement when it is absent (upstream never schedules a
    /// binding without one; an empty placement keeps the plugins total).
    pub fn placement(&self) -> &'a Placement {
        placement_of(self.spec)
    }
}

/// A filter extension point.
pub trait FilterPlugin: Send + Sync {
    /// Whether the binding may go to `ctx.cluster`.
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult;
}

/// What a score plugin may look at for one cluster.
#[derive(Clone, Copy)]
pub struct ScoreContext<'a> {
    /// The binding's spec.
    pub spec: &'a ResourceBindingSpec,
    /// `spec.clusters` indexed by name.
    pub targets: &'a TargetIndex<'a>,
    /// The feasible cluster being scored.
    pub cluster: &'a Cluster,
}

/// A score extension point.
pub trait ScorePlugin: Send + Sync {
    /// The cluster's score (0..=100 for in-tree plugins), or a failed result.
    fn score(&self, ctx: &ScoreContext<'_>) -> Result<i64, PluginResult>;

    /// Adjust all scores of this plugin at once (in-tree plugins leave them alone).
    fn normalize_score(&self, _scores: &mut [i64]) -> PluginResult {
        PluginResult::success()
    }

    /// Whether the plugin has a normalisation step at all: only then is it timed as
    /// `ScoreExtensionNormalize`, as the reference does for plugins whose `ScoreExtensions()`
    /// is not nil.
    fn has_score_extensions(&self) -> bool {
        false
    }
}

/// A scheduling plugin: a name and the extension points it implements.
pub trait Plugin: Send + Sync {
    /// The registry name, e.g. `TaintToleration`.
    fn name(&self) -> &'static str;
    /// The filter extension, if any.
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    /// The score extension, if any.
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
}

/// Builds a plugin (a closure, so that out-of-tree plugins can carry configuration).
pub type PluginFactory = Arc<dyn Fn() -> Result<Arc<dyn Plugin>, String> + Send + Sync>;

/// Registry errors, worded as the reference words them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("a plugin named {0} already exists")]
    Duplicate(String),
    #[error("no plugin named {0} exists")]
    Missing(String),
    #[error("failed to initialize plugin {0:?}: {1}")]
    Init(String, String),
}

/// Plugin name → factory, in declaration order (which fixes the filter order).
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<(String, PluginFactory)>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(n, _)| n))
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a plugin at the end; a second plugin with the same name is an error.
    pub fn register<F>(&mut self, name: &str, factory: F) -> Result<(), RegistryError>
    where
        F: Fn() -> Result<Arc<dyn Plugin>, String> + Send + Sync + 'static,
    {
        self.register_shared(name, Arc::new(factory))
    }

    fn register_shared(&mut self, name: &str, factory: PluginFactory) -> Result<(), RegistryError> {
        if self.contains(name) {
            return Err(RegistryError::Duplicate(name.to_string()));
        }
        self.entries.push((name.to_string(), factory));
        Ok(())
    }

    /// Remove a plugin; removing an unknown name is an error.
    pub fn unregister(&mut self, name: &str) -> Result<(), RegistryError> {
        let Some(i) = self.entries.iter().position(|(n, _)| n == name) else {
            return Err(RegistryError::Missing(name.to_string()));
        };
        self.entries.remove(i);
        Ok(())
    }

    /// Add every plugin of `other`; stops at the first duplicate.
    pub fn merge(&mut self, other: &Registry) -> Result<(), RegistryError> {
        for (name, factory) in &other.entries {
            self.register_shared(name, factory.clone())?;
        }
        Ok(())
    }

    /// Whether a plugin of this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|(n, _)| n == name)
    }

    /// All names, sorted (the reference's `FactoryNames`).
    pub fn factory_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.entries.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        names
    }

    /// Names in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// Resolve a `--plugins` list: `*` anywhere starts from every plugin;
    /// then, in order, a registered name enables it and `-Name` (all leading dashes stripped)
    /// disables it, but only while the set is non-empty; anything else is ignored.
    pub fn filter<S: AsRef<str>>(&self, names: &[S]) -> Registry {
        let mut enabled: BTreeSet<&str> = BTreeSet::new();
        if names.iter().any(|n| n.as_ref() == "*") {
            enabled.extend(self.entries.iter().map(|(n, _)| n.as_str()));
        }
        for name in names {
            let name = name.as_ref();
            if let Some((n, _)) = self.entries.iter().find(|(n, _)| n == name) {
                enabled.insert(n.as_str());
                continue;
            }
            if name.starts_with('-') && !enabled.is_empty() {
                enabled.remove(name.trim_start_matches('-'));
            }
        }
        Registry {
            entries: self
                .entries
                .iter()
                .filter(|(n, _)| enabled.contains(n.as_str()))
                .cloned()
                .collect(),
        }
    }
}

/// Why a cluster did not pass the filters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The first plugin that did not return success.
    pub plugin: &'static str,
    /// What it returned.
    pub result: PluginResult,
}

/// Per-plugin scores of the feasible clusters, in cluster order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScoreTable {
    /// `(plugin name, score per cluster)`, in plugin order.
    pub per_plugin: Vec<(&'static str, Vec<i64>)>,
    /// The sum over plugins per cluster (every weight is 1 upstream).
    pub totals: Vec<i64>,
}

/// Instantiated filter and score plugins.
#[derive(Clone, Default)]
pub struct Framework {
    filters: Vec<Arc<dyn Plugin>>,
    scores: Vec<Arc<dyn Plugin>>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("filters", &self.filter_plugin_names())
            .field("scores", &self.score_plugin_names())
            .finish()
    }
}

impl Framework {
    /// Build every plugin of the registry, in its declaration order.
    pub fn new(registry: &Registry) -> Result<Self, RegistryError> {
        let mut fw = Framework::default();
        for (name, factory) in &registry.entries {
            let p = factory().map_err(|e| RegistryError::Init(name.clone(), e))?;
            if p.as_filter().is_some() {
                fw.filters.push(p.clone());
            }
            if p.as_score().is_some() {
                fw.scores.push(p);
            }
        }
        Ok(fw)
    }

    /// Names of the filter plugins, in the order they run.
    pub fn filter_plugin_names(&self) -> Vec<&'static str> {
        self.filters.iter().map(|p| p.name()).collect()
    }

    /// Names of the score plugins.
    pub fn score_plugin_names(&self) -> Vec<&'static str> {
        self.scores.iter().map(|p| p.name()).collect()
    }

    /// Run the filters on one cluster; the first non-success wins and later plugins do not run.
    pub fn run_filter_plugins(&self, ctx: &FilterContext<'_>) -> Result<(), Rejection> {
        self.run_filter_plugins_observed(ctx, FrameworkObserver::none())
    }

    /// [`Framework::run_filter_plugins`], reporting the extension point and the plugin calls
    /// to `obs`.
    pub fn run_filter_plugins_observed(
        &self,
        ctx: &FilterContext<'_>,
        obs: FrameworkObserver<'_>,
    ) -> Result<(), Rejection> {
        let start = obs.point_start();
        for p in &self.filters {
            let Some(f) = p.as_filter() else { continue };
            let plugin_start = obs.plugin_start();
            let result = f.filter(ctx);
            obs.plugin_end(
                ExtensionPoint::Filter,
                p.name(),
                result.code(),
                plugin_start,
            );
            if !result.is_success() {
                obs.point_end(ExtensionPoint::Filter, result.code(), start);
                return Err(Rejection {
                    plugin: p.name(),
                    result,
                });
            }
        }
        obs.point_end(ExtensionPoint::Filter, Code::Success, start);
        Ok(())
    }

    /// Score every cluster with every score plugin, normalise, and sum. A failing plugin fails
    /// the whole phase with the reference's wording.
    pub fn run_score_plugins(
        &self,
        spec: &ResourceBindingSpec,
        targets: &TargetIndex<'_>,
        clusters: &[&Cluster],
    ) -> Result<ScoreTable, String> {
        self.run_score_plugins_observed(spec, targets, clusters, FrameworkObserver::none())
    }

    /// [`Framework::run_score_plugins`], reporting the extension point and the plugin calls
    /// to `obs`.
    pub fn run_score_plugins_observed(
        &self,
        spec: &ResourceBindingSpec,
        targets: &TargetIndex<'_>,
        clusters: &[&Cluster],
        obs: FrameworkObserver<'_>,
    ) -> Result<ScoreTable, String> {
        let start = obs.point_start();
        let result = self.score_all(spec, targets, clusters, obs);
        let code = if result.is_ok() {
            Code::Success
        } else {
            Code::Error
        };
        obs.point_end(ExtensionPoint::Score, code, start);
        result
    }

    fn score_all(
        &self,
        spec: &ResourceBindingSpec,
        targets: &TargetIndex<'_>,
        clusters: &[&Cluster],
        obs: FrameworkObserver<'_>,
    ) -> Result<ScoreTable, String> {
        let mut table = ScoreTable {
            per_plugin: Vec::new(),
            totals: vec![0; clusters.len()],
        };
        for p in &self.scores {
            let Some(s) = p.as_score() else { continue };
            let mut list = Vec::with_capacity(clusters.len());
            for c in clusters {
                let plugin_start = obs.plugin_start();
                let scored = s.score(&ScoreContext {
                    spec,
                    targets,
                    cluster: c,
                });
                let code = scored.as_ref().map_or_else(|r| r.code(), |_| Code::Success);
                obs.plugin_end(ExtensionPoint::Score, p.name(), code, plugin_start);
                match scored {
                    Ok(v) => list.push(v),
                    Err(r) => {
                        let text = r.as_error().unwrap_or_default();
                        return Err(format!("plugin {:?} failed with: {text}", p.name()));
                    }
                }
            }
            let plugin_start = obs.plugin_start();
            let r = s.normalize_score(&mut list);
            if s.has_score_extensions() {
                obs.plugin_end(
                    ExtensionPoint::ScoreExtensionNormalize,
                    p.name(),
                    r.code(),
                    plugin_start,
                );
            }
            if let Some(text) = r.as_error() {
                return Err(format!(
                    "plugin {:?} normalizeScore failed with: {text}",
                    p.name()
                ));
            }
            for (t, v) in table.totals.iter_mut().zip(&list) {
                *t += *v;
            }
            table.per_plugin.push((p.name(), list));
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FitError;
    use std::collections::BTreeMap;

    #[derive(Debug)]
    struct Nop;
    impl Plugin for Nop {
        fn name(&self) -> &'static str {
            "nop"
        }
    }
    fn nop() -> Result<Arc<dyn Plugin>, String> {
        Ok(Arc::new(Nop))
    }

    fn registry(names: &[&str]) -> Registry {
        let mut r = Registry::new();
        for n in names {
            r.register(n, nop).unwrap();
        }
        r
    }

    // karmada v1.18.2 framework/runtime/registry_test.go: TestRegistry_Filter.
    #[test]
    fn registry_filter() {
        let r = registry(&["bar", "foo", "fuzz"]);
        let cases: &[(&[&str], &[&str])] = &[
            (&["foo"], &["foo"]),
            (&["*"], &["bar", "foo", "fuzz"]),
            (&["*", "-foo"], &["bar", "fuzz"]),
            (&["-foo", "*"], &["bar", "fuzz"]),
            // Consequences of the list rules.
            (&["-foo"], &[]),
            (&["foo", "-foo"], &[]),
            (&["-foo", "bar"], &["bar"]),
            (&["unknown", "*", "--foo"], &["bar", "fuzz"]),
            (&["bar", "-foo", "fuzz"], &["bar", "fuzz"]),
            (&[], &[]),
        ];
        for (flags, want) in cases {
            assert_eq!(
                r.filter(flags).factory_names(),
                *want,
                "--plugins={flags:?}"
            );
        }
    }

    // registry_test.go: TestRegistry_Register.
    #[test]
    fn registry_register() {
        let mut r = Registry::new();
        r.register("p1", nop).unwrap();
        assert_eq!(r.factory_names(), ["p1"]);
        r.register("p2", nop).unwrap();
        assert_eq!(r.factory_names(), ["p1", "p2"]);
        let err = r.register("p1", nop).unwrap_err();
        assert_eq!(err.to_string(), "a plugin named p1 already exists");
        assert_eq!(r.factory_names(), ["p1", "p2"]);
    }

    // registry_test.go: TestRegistry_Unregister.
    #[test]
    fn registry_unregister() {
        let mut r = registry(&["p1"]);
        assert_eq!(
            r.unregister("p2").unwrap_err().to_string(),
            "no plugin named p2 exists"
        );
        assert_eq!(r.factory_names(), ["p1"]);
        let mut r = registry(&["p1", "p2", "p3"]);
        r.unregister("p1").unwrap();
        assert_eq!(r.factory_names(), ["p2", "p3"]);
    }

    // registry_test.go: TestRegistry_Merge.
    #[test]
    fn registry_merge() {
        let mut r1 = registry(&["p1", "p2", "p3"]);
        let r2 = registry(&["p4", "p5"]);
        r1.merge(&r2).unwrap();
        assert_eq!(r1.factory_names(), ["p1", "p2", "p3", "p4", "p5"]);
    }

    #[test]
    fn filter_keeps_declaration_order() {
        let r = registry(&["zeta", "alpha", "mid"]);
        let f = r.filter(&["mid", "zeta", "alpha"]);
        assert_eq!(f.names().collect::<Vec<_>>(), ["zeta", "alpha", "mid"]);
    }

    /// A plugin with fixed answers, standing in for upstream's gomock plugins.
    struct Fixed {
        filter: Option<PluginResult>,
        score: Option<Result<i64, PluginResult>>,
        normalize: PluginResult,
    }
    impl Plugin for Fixed {
        fn name(&self) -> &'static str {
            "foo"
        }
        fn as_filter(&self) -> Option<&dyn FilterPlugin> {
            self.filter.as_ref().map(|_| self as &dyn FilterPlugin)
        }
        fn as_score(&self) -> Option<&dyn ScorePlugin> {
            self.score.as_ref().map(|_| self as &dyn ScorePlugin)
        }
    }
    impl FilterPlugin for Fixed {
        fn filter(&self, _ctx: &FilterContext<'_>) -> PluginResult {
            self.filter.clone().unwrap_or_else(PluginResult::success)
        }
    }
    impl ScorePlugin for Fixed {
        fn score(&self, _ctx: &ScoreContext<'_>) -> Result<i64, PluginResult> {
            self.score.clone().unwrap_or(Ok(0))
        }
        fn normalize_score(&self, _scores: &mut [i64]) -> PluginResult {
            self.normalize.clone()
        }
    }
    fn always_error() -> Result<Arc<dyn Plugin>, String> {
        Ok(Arc::new(Fixed {
            filter: Some(PluginResult::new(Code::Error, vec!["foo".into()])),
            score: None,
            normalize: PluginResult::success(),
        }))
    }
    fn always_success() -> Result<Arc<dyn Plugin>, String> {
        Ok(Arc::new(Fixed {
            filter: Some(PluginResult::success()),
            score: None,
            normalize: PluginResult::success(),
        }))
    }
    fn broken() -> Result<Arc<dyn Plugin>, String> {
        Err("no such thing".into())
    }

    type Factory = fn() -> Result<Arc<dyn Plugin>, String>;

    fn filter_with(factories: &[Factory]) -> Result<(), Rejection> {
        let mut r = Registry::new();
        for (i, f) in factories.iter().enumerate() {
            r.register(&format!("foo{i}"), *f).unwrap();
        }
        let fw = Framework::new(&r).unwrap();
        let spec = ResourceBindingSpec::default();
        let status = ResourceBindingStatus::default();
        let targets = TargetIndex::new(&spec.clusters);
        let cluster = Cluster::new("c1", Default::default());
        fw.run_filter_plugins(&FilterContext {
            spec: &spec,
            status: &status,
            targets: &targets,
            cluster: &cluster,
            workload_index: None,
            prepared: None,
        })
    }

    // karmada v1.18.2 framework/runtime/framework_test.go: Test_frameworkImpl_RunFilterPlugins.
    #[test]
    fn run_filter_plugins() {
        assert!(filter_with(&[]).is_ok(), "no filter plugin");
        assert!(filter_with(&[always_error]).is_err(), "error filter plugin");
        assert!(
            filter_with(&[always_success]).is_ok(),
            "success filter plugin"
        );
        assert!(filter_with(&[always_error, always_success]).is_err());
        let rejection = filter_with(&[always_success, always_error]).unwrap_err();
        assert_eq!(rejection.plugin, "foo");
        assert_eq!(rejection.result.as_error().unwrap(), "foo");
        let mut r = Registry::new();
        r.register("bad", broken).unwrap();
        assert_eq!(
            Framework::new(&r).unwrap_err().to_string(),
            "failed to initialize plugin \"bad\": no such thing"
        );
    }

    // framework_test.go: Test_frameworkImpl_RunScorePlugins.
    #[test]
    fn run_score_plugins() {
        fn run(p: Fixed) -> Result<ScoreTable, String> {
            let plugin: Arc<dyn Plugin> = Arc::new(p);
            let mut r = Registry::new();
            r.register("foo0", move || Ok(plugin.clone())).unwrap();
            let fw = Framework::new(&r).unwrap();
            let spec = ResourceBindingSpec::default();
            let targets = TargetIndex::new(&spec.clusters);
            let c1 = Cluster::new("c1", Default::default());
            fw.run_score_plugins(&spec, &targets, &[&c1])
        }
        let ok = run(Fixed {
            filter: None,
            score: Some(Ok(60)),
            normalize: PluginResult::success(),
        })
        .unwrap();
        assert_eq!(ok.totals, [60]);
        assert_eq!(ok.per_plugin, [("foo", vec![60])]);
        let err = run(Fixed {
            filter: None,
            score: Some(Err(PluginResult::new(Code::Error, vec!["foo".into()]))),
            normalize: PluginResult::success(),
        })
        .unwrap_err();
        assert_eq!(err, "plugin \"foo\" failed with: foo");
        let err = run(Fixed {
            filter: None,
            score: Some(Ok(60)),
            normalize: PluginResult::new(Code::Error, vec!["foo".into()]),
        })
        .unwrap_err();
        assert_eq!(err, "plugin \"foo\" normalizeScore failed with: foo");
    }

    // karmada v1.18.2 framework/interface_test.go: Result helpers.
    #[test]
    fn result_semantics() {
        assert_eq!(PluginResult::success().as_error(), None);
        assert!(PluginResult::success().is_success());
        let r = PluginResult::new(Code::Unschedulable, vec!["a".into(), "b".into()]);
        assert_eq!(r.as_error().unwrap(), "a, b");
        assert_eq!(r.code().as_str(), "Unschedulable");
        let r = PluginResult::new(Code::Error, vec!["a".into(), "b".into()]);
        assert_eq!(r.as_error().unwrap(), "a,b");
        assert_eq!(Code::Success.as_str(), "Success");
        assert_eq!(Code::Error.as_str(), "Error");
    }

    // karmada v1.18.2 framework/types_test.go: TestFitError_Error.
    #[test]
    fn fit_error_text() {
        let e = FitError {
            num_all_clusters: 0,
            diagnosis: BTreeMap::new(),
        };
        assert_eq!(
            e.to_string(),
            "0/0 clusters are available: no cluster exists."
        );

        let mut d = BTreeMap::new();
        d.insert(
            "cluster1".to_string(),
            vec!["insufficient CPU".into(), "insufficient memory".into()],
        );
        d.insert("cluster2".to_string(), vec!["insufficient CPU".into()]);
        d.insert("cluster3".to_string(), vec!["taint mismatch".into()]);
        let got = FitError {
            num_all_clusters: 3,
            diagnosis: d,
        }
        .to_string();
        assert_eq!(
            got,
            "0/3 clusters are available: 1 insufficient memory, 1 taint mismatch, 2 insufficient CPU."
        );

        // Counts sort as strings: "10 x" before "2 y".
        let mut d = BTreeMap::new();
        for i in 0..10 {
            d.insert(format!("a{i}"), vec!["x".to_string()]);
        }
        d.insert("b1".into(), vec!["y".into()]);
        d.insert("b2".into(), vec!["y".into()]);
        let got = FitError {
            num_all_clusters: 12,
            diagnosis: d,
        }
        .to_string();
        assert_eq!(got, "0/12 clusters are available: 10 x, 2 y.");

        // All clusters deleting: nothing diagnosed.
        let e = FitError {
            num_all_clusters: 3,
            diagnosis: BTreeMap::new(),
        };
        assert_eq!(
            e.to_string(),
            "0/3 clusters are available: no cluster exists."
        );
    }
}
