//! Seeded scheduling inputs: Cluster objects with their status, and bindings, as
//! `serde_json::Value`s in the shape the v1.18.2 CRDs accept. One generator, two mixes:
//!
//! * [`oracle_file`]: one input file of the differential test against the upstream scheduler
//!   (crates/scheduler/tests/differential.rs). Everything is what the upstream webhooks and
//!   CRD defaulting would let into the API server, corners included (odd quantity formats,
//!   names of clusters that do not exist, present-but-empty lists, deleting and not-ready
//!   clusters, previous placements, eviction tasks, reschedule requests and the status they
//!   are compared with), and it stays away from the few places where upstream leaves the
//!   outcome to chance. Most files have at most 12 clusters, so every replica list that Go
//!   sorts with `sort.Sort` is insertion-sorted (stable); one file in ten has 13 to 16, where
//!   Go's pdqsort is deterministic but unstable.
//! * [`generate`]: the bench's workload, over clusters named `member1..memberN`. Clusters with
//!   sync modes, providers, regions, zones, env/tier/team/rack/gpu/edge labels, taints of the
//!   three effects (the not-ready and unreachable ones too), capacity of whole nodes with
//!   allocated and allocating parts in several quantity formats, node summaries, resource
//!   models and their counts on some, partial API enablements on some, a few not Ready;
//!   bindings (ResourceBindings and ClusterResourceBindings) for Deployments, StatefulSets,
//!   Jobs, a CRD kind, ConfigMaps, ClusterRoles and Namespaces, with 0 to 200 replicas and
//!   requests in several formats, every replica strategy (none, Duplicated, Aggregated,
//!   dynamic and static weights, plain Weighted), cluster affinities (label and field
//!   selectors, names, some of clusters that do not exist, exclusions), ordered affinity terms
//!   with overflow affinities, spread constraints by cluster/region/zone/provider,
//!   tolerations and workload affinity groups. What a new binding does not carry (previous
//!   placements, eviction tasks, reschedule requests, a status) is left out, as are deletion
//!   timestamps, which the API server drops on create, and the corners no bench cluster could
//!   take (GPU and ephemeral-storage requests, spread by label, maxGroups 0). Its odds keep
//!   nearly every binding schedulable, as the bench's earlier generator did: at seed 1, 997 in
//!   1,000 with 100 clusters, 1,000 with 1,000 and 990 with 10 (the earlier generator: 999,
//!   999 and 946); the bench's tests hold the figure.
//!
//! The same code draws both; `Mix::p` gives a corner its own odds in each. The same seed
//! gives the same inputs on every machine; keep the oracle's draws as they are (its files are
//! what the differential test has been agreeing on).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::rng::Rng;

/// Namespaces the bench's ResourceBindings live in.
pub const NAMESPACES: &[&str] = &["bench-a", "bench-b", "bench-c", "bench-d"];

/// One generated binding, without its scheduler name.
#[derive(Clone, Debug)]
pub struct BindingTemplate {
    /// `None` for a ClusterResourceBinding.
    pub namespace: Option<String>,
    pub name: String,
    /// `metadata.labels` (none in the oracle's files).
    pub labels: Value,
    /// `spec` without `schedulerName`.
    pub spec: Value,
    /// `status` (the oracle's files only).
    pub status: Value,
    /// Short description of the replica strategy, for disagreement reports.
    pub strategy: &'static str,
}

impl BindingTemplate {
    /// `ns/name` for a ResourceBinding, `name` for a ClusterResourceBinding.
    pub fn key(&self, suffix: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}{suffix}", self.name),
            None => format!("{}{suffix}", self.name),
        }
    }

    /// The object as generated, for the default scheduler.
    pub fn manifest(&self) -> Value {
        let mut meta = Map::new();
        meta.insert("name".into(), json!(self.name));
        if self.labels.as_object().is_some_and(|l| !l.is_empty()) {
            meta.insert("labels".into(), self.labels.clone());
        }
        if let Some(ns) = &self.namespace {
            meta.insert("namespace".into(), json!(ns));
        }
        let mut obj = Map::new();
        obj.insert("apiVersion".into(), json!("work.karmada.io/v1alpha2"));
        let kind = match self.namespace {
            Some(_) => "ResourceBinding",
            None => "ClusterResourceBinding",
        };
        obj.insert("kind".into(), json!(kind));
        obj.insert("metadata".into(), Value::Object(meta));
        obj.insert("spec".into(), self.spec.clone());
        if self.status.as_object().is_some_and(|s| !s.is_empty()) {
            obj.insert("status".into(), self.status.clone());
        }
        Value::Object(obj)
    }

    /// The object to create: `name + suffix`, owned by `scheduler`.
    pub fn object(&self, suffix: &str, scheduler: &str) -> Value {
        let mut obj = self.manifest();
        obj["metadata"]["name"] = json!(format!("{}{suffix}", self.name));
        obj["spec"]["schedulerName"] = json!(scheduler);
        obj
    }
}

/// Clusters, bindings, and (oracle files) the `--estimator-replicas` answers.
pub struct Workload {
    pub clusters: Vec<Value>,
    pub cluster_names: Vec<String>,
    pub bindings: Vec<BindingTemplate>,
    pub estimator: BTreeMap<String, i32>,
}

impl Workload {
    /// The multi-document YAML that `simulate -f` and the oracle read.
    pub fn to_yaml(&self) -> String {
        let bindings = self.bindings.iter().map(BindingTemplate::manifest);
        let objects: Vec<Value> = self.clusters.iter().cloned().chain(bindings).collect();
        let docs: Vec<String> = objects.iter().map(to_yaml).collect();
        docs.join("---\n")
    }

    /// The `--estimator-replicas` flags, sorted by cluster name.
    pub fn estimator_args(&self) -> Vec<String> {
        self.estimator
            .iter()
            .flat_map(|(c, n)| ["--estimator-replicas".to_string(), format!("{c}={n}")])
            .collect()
    }
}

/// Which inputs are drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mix {
    /// The differential test's files ([`oracle_file`]).
    Oracle,
    /// The bench's workload ([`generate`]).
    Bench,
}

impl Mix {
    /// The percent chance of a corner in this mix (0: never, and nothing drawn).
    fn p(self, oracle: u32, bench: u32) -> u32 {
        match self {
            Mix::Oracle => oracle,
            Mix::Bench => bench,
        }
    }

    fn labels(self) -> &'static [(&'static str, &'static [&'static str])] {
        match self {
            Mix::Oracle => LABELS,
            Mix::Bench => BENCH_LABELS,
        }
    }

    fn apis(self) -> &'static [(&'static str, &'static [(&'static str, &'static str)])] {
        match self {
            Mix::Oracle => APIS,
            Mix::Bench => BENCH_APIS,
        }
    }
}

const STYLE_A: &[&str] = &[
    "ams", "bom", "cdg", "dfw", "eze", "fra", "gru", "hkg", "iad", "jfk", "kix", "lhr",
];
const STYLE_B: &[&str] = &[
    "member1", "member2", "member3", "member4", "member5", "member6", "member7", "member8",
    "member9", "member10", "member11", "member12",
];
const STYLE_C: &[&str] = &[
    "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11", "c12", "c13",
    "c14", "c15", "c16",
];
const PROVIDERS: &[&str] = &["aws", "gcp", "azure"];
const REGIONS: &[&str] = &["us-east-1", "us-west-2", "eu-west-1", "ap-south-1"];
const LABELS: &[(&str, &[&str])] = &[
    ("env", &["prod", "staging", "dev"]),
    ("tier", &["gold", "silver", "bronze"]),
    ("topology.example.io/rack", &["r1", "r2"]),
    ("gpu", &["true"]),
];
const BENCH_LABELS: &[(&str, &[&str])] = &[
    ("env", &["prod", "staging", "dev"]),
    ("tier", &["gold", "silver", "bronze"]),
    (
        "team",
        &["payments", "search", "ml", "web", "data", "infra"],
    ),
    ("topology.example.io/rack", &["r1", "r2"]),
    ("gpu", &["true"]),
    ("edge", &["true"]),
];
const TAINT_KEYS: &[&str] = &[
    "dedicated",
    "gpu",
    "cluster.karmada.io/not-ready",
    "cluster.karmada.io/unreachable",
];
const TAINT_VALUES: &[&str] = &["", "true", "team-a"];
const EFFECTS: &[&str] = &["NoSchedule", "NoExecute", "PreferNoSchedule"];
const TIME_A: &str = "2024-01-01T00:00:00Z";
const TIME_B: &str = "2024-01-02T00:00:00Z";

/// (groupVersion, [(resource, kind)]) that clusters may enable.
type Apis = &'static [(&'static str, &'static [(&'static str, &'static str)])];
const APIS: Apis = &[
    (
        "apps/v1",
        &[
            ("deployments", "Deployment"),
            ("statefulsets", "StatefulSet"),
        ],
    ),
    (
        "v1",
        &[("configmaps", "ConfigMap"), ("services", "Service")],
    ),
    ("batch/v1", &[("jobs", "Job")]),
    (
        "rbac.authorization.k8s.io/v1",
        &[("clusterroles", "ClusterRole")],
    ),
];
const BENCH_APIS: Apis = &[
    (
        "apps/v1",
        &[
            ("deployments", "Deployment"),
            ("statefulsets", "StatefulSet"),
        ],
    ),
    (
        "v1",
        &[
            ("pods", "Pod"),
            ("configmaps", "ConfigMap"),
            ("services", "Service"),
            ("namespaces", "Namespace"),
        ],
    ),
    ("batch/v1", &[("jobs", "Job")]),
    (
        "rbac.authorization.k8s.io/v1",
        &[("clusterroles", "ClusterRole")],
    ),
    ("example.io/v1", &[("widgets", "Widget")]),
];

/// The zones of all clusters, sorted and without duplicates (one made up when there is none),
/// for field selectors.
fn all_zones(per_cluster: Vec<Vec<String>>) -> Vec<String> {
    let mut zones: Vec<String> = per_cluster.into_iter().flatten().collect();
    zones.sort();
    zones.dedup();
    if zones.is_empty() {
        zones.push("us-east-1a".to_string());
    }
    zones
}

/// The name of the bench's cluster `i` (from 0), as `hack/local-up.sh` names the members, so
/// that the members of a small run are clusters of the workload.
pub fn cluster_name(i: usize) -> String {
    format!("member{}", i + 1)
}

/// Input file `index` of the differential run seeded with `seed`, with `bindings` bindings;
/// independent of the other files.
pub fn oracle_file(seed: u64, index: u64, bindings: usize) -> Workload {
    let mut g = Gen {
        rng: Rng::derive(seed, index),
        mix: Mix::Oracle,
    };
    let rng = &mut g.rng;
    let pool = match rng.below(10) {
        0 => STYLE_C,
        1..=6 => STYLE_A,
        _ => STYLE_B,
    };
    let n = if pool.len() > 12 {
        // more than 12 entries: Go's sort.Sort leaves insertion sort for pdqsort, which is
        // deterministic but not stable (the port must match it entry for entry)
        rng.range(13, pool.len() as i64)
    } else if rng.percent(20) {
        rng.range(1, 3)
    } else {
        rng.range(2, 12)
    } as usize;
    let names: Vec<String> = rng
        .choose(pool, n, n)
        .into_iter()
        .map(String::from)
        .collect();
    let (clusters, zones) = g.clusters(&names);

    let rng = &mut g.rng;
    let mut estimator = BTreeMap::new();
    match rng.below(10) {
        0..=4 => {}
        5..=7 => {
            for name in &names {
                estimator.insert(name.clone(), rng.range(0, 30) as i32);
            }
        }
        _ => {
            for name in rng.choose(&names, 1, n) {
                estimator.insert(name, rng.range(0, 30) as i32);
            }
        }
    }
    let bindings = (0..bindings)
        .map(|i| g.binding(i, &names, &zones))
        .collect();
    Workload {
        clusters,
        cluster_names: names,
        bindings,
        estimator,
    }
}

/// The bench's workload: `clusters` Cluster objects and `bindings` binding templates from
/// `seed` (what it draws: the module's documentation).
pub fn generate(seed: u64, clusters: usize, bindings: usize) -> Workload {
    let root = Rng::new(seed);
    let mut g = Gen {
        rng: root.fork("clusters"),
        mix: Mix::Bench,
    };
    let names: Vec<String> = (0..clusters).map(cluster_name).collect();
    let (clusters, zones) = g.clusters(&names);
    g.rng = root.fork("bindings");
    let bindings = (0..bindings)
        .map(|j| g.binding(j, &names, &zones))
        .collect();
    Workload {
        clusters,
        cluster_names: names,
        bindings,
        estimator: BTreeMap::new(),
    }
}

/// The draws and the mix they are for.
struct Gen {
    rng: Rng,
    mix: Mix,
}

impl Gen {
    /// A Cluster object per name, and the zones of them all (as [`all_zones`]).
    fn clusters(&mut self, names: &[String]) -> (Vec<Value>, Vec<String>) {
        let (clusters, zones): (Vec<Value>, Vec<Vec<String>>) =
            names.iter().map(|name| self.cluster(name)).unzip();
        (clusters, all_zones(zones))
    }

    /// A Cluster object and its zones.
    fn cluster(&mut self, name: &str) -> (Value, Vec<String>) {
        let (rng, mix) = (&mut self.rng, self.mix);
        let mut metadata = Map::new();
        metadata.insert("name".into(), json!(name));
        let mut labels = Map::new();
        for (k, vs) in mix.labels() {
            if rng.percent(mix.p(55, 80)) {
                labels.insert((*k).into(), json!(rng.pick(vs)));
            }
        }
        if !labels.is_empty() {
            metadata.insert("labels".into(), Value::Object(labels));
        }
        if rng.percent(mix.p(5, 0)) {
            metadata.insert("deletionTimestamp".into(), json!(TIME_A));
            metadata.insert(
                "finalizers".into(),
                json!(["karmada.io/cluster-controller"]),
            );
        }

        let mut spec = Map::new();
        spec.insert(
            "syncMode".into(),
            json!(if rng.percent(80) { "Push" } else { "Pull" }),
        );
        if mix == Mix::Bench {
            spec.insert("apiEndpoint".into(), json!("https://127.0.0.1:1"));
        }
        if rng.percent(80) {
            spec.insert("provider".into(), json!(rng.pick(PROVIDERS)));
        }
        let mut zones = Vec::new();
        if rng.percent(85) {
            let region = *rng.pick(REGIONS);
            spec.insert("region".into(), json!(region));
            if rng.percent(75) {
                let all: Vec<String> = ["a", "b", "c"]
                    .iter()
                    .map(|s| format!("{region}{s}"))
                    .collect();
                zones = rng.choose(&all, 1, 2);
            }
        } else if rng.percent(30) {
            zones = vec!["zone-x".to_string()];
        } else if rng.percent(20) {
            // only the legacy singular field, which the algorithm never reads
            spec.insert("zone".into(), json!("legacy-zone"));
        }
        if !zones.is_empty() {
            spec.insert("zones".into(), json!(zones));
            if rng.percent(30) {
                spec.insert("zone".into(), json!(zones[0]));
            }
        }
        let mut taints = Vec::new();
        for _ in 0..rng.range(0, 2) {
            // the bench's clusters are rarely tainted: at ten clusters, an affinity often leaves
            // one or two
            if rng.percent(mix.p(50, 95)) {
                continue;
            }
            let mut t = Map::new();
            t.insert("key".into(), json!(rng.pick(TAINT_KEYS)));
            let v = *rng.pick(TAINT_VALUES);
            if !v.is_empty() {
                t.insert("value".into(), json!(v));
            }
            t.insert("effect".into(), json!(rng.pick(EFFECTS)));
            taints.push(Value::Object(t));
        }
        if !taints.is_empty() {
            spec.insert("taints".into(), Value::Array(taints));
        }
        let models = rng.percent(30);
        if models {
            spec.insert("resourceModels".into(), gen_models(rng));
        }

        let mut status = Map::new();
        let mut enablements = Vec::new();
        let full = rng.percent(mix.p(80, 97));
        for (gv, resources) in mix.apis() {
            let kept: Vec<Value> = resources
                .iter()
                .filter(|_| full || rng.percent(60))
                .map(|(r, k)| json!({"name": r, "kind": k}))
                .collect();
            if !kept.is_empty() {
                enablements.push(json!({"groupVersion": gv, "resources": kept}));
            }
        }
        if !enablements.is_empty() || rng.percent(50) {
            status.insert("apiEnablements".into(), Value::Array(enablements));
        }
        let mut conditions = vec![json!({
            "type": "Ready",
            "status": if rng.percent(mix.p(85, 97)) { "True" } else { "False" },
            "reason": "ClusterReady",
            "message": "cluster is healthy and ready to accept workloads",
            "lastTransitionTime": TIME_A,
        })];
        if rng.percent(mix.p(30, 100)) {
            conditions.push(json!({
                "type": "CompleteAPIEnablements",
                "status": if full { "True" } else { "False" },
                "reason": "Complete",
                "message": "",
                "lastTransitionTime": TIME_A,
            }));
        }
        status.insert("conditions".into(), Value::Array(conditions));
        match mix {
            Mix::Oracle => {
                if rng.percent(90) {
                    status.insert("resourceSummary".into(), gen_summary(rng, models));
                }
            }
            Mix::Bench => {
                let (summary, nodes) = gen_capacity(rng, models);
                status.insert("kubernetesVersion".into(), json!("v1.35.3"));
                status.insert(
                    "nodeSummary".into(),
                    json!({"totalNum": nodes, "readyNum": nodes}),
                );
                status.insert("resourceSummary".into(), summary);
            }
        }

        let obj = json!({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        });
        (obj, zones)
    }

    fn binding(&mut self, index: usize, names: &[String], zones: &[String]) -> BindingTemplate {
        let (rng, mix) = (&mut self.rng, self.mix);
        let crb = rng.percent(15);
        let res = if crb {
            if rng.percent(50) {
                Res::ClusterRole
            } else if rng.percent(mix.p(0, 50)) {
                Res::Namespace
            } else {
                Res::Deployment
            }
        } else {
            match rng.below(20) {
                0..=9 => Res::Deployment,
                10..=11 => Res::StatefulSet,
                12..=13 => Res::Job,
                14..=18 => Res::ConfigMap,
                _ => Res::Widget,
            }
        };
        let (api_version, kind) = res.api();
        let (name, object_name) = match mix {
            Mix::Oracle => (format!("b{index:03}"), format!("app-{index:03}")),
            Mix::Bench => {
                let name = format!("{}-{index:06}", kind.to_ascii_lowercase());
                (name.clone(), name)
            }
        };
        let namespace = if crb {
            ""
        } else if mix == Mix::Bench {
            NAMESPACES[index % NAMESPACES.len()]
        } else if rng.percent(70) {
            "default"
        } else {
            "team-a"
        };

        let mut resource = Map::new();
        resource.insert("apiVersion".into(), json!(api_version));
        resource.insert("kind".into(), json!(kind));
        if !namespace.is_empty() {
            resource.insert("namespace".into(), json!(namespace));
        }
        resource.insert("name".into(), json!(object_name));
        if rng.percent(mix.p(50, 100)) {
            resource.insert("uid".into(), json!(uid(rng)));
        }
        let mut labels = Map::new();
        if mix == Mix::Bench {
            // the labels a policy's binding carries
            let key = match (crb, rng.percent(5)) {
                (_, true) => "binding.karmada.io/managed-by",
                (true, false) => "clusterpropagationpolicy.karmada.io/permanent-id",
                (false, false) => "propagationpolicy.karmada.io/permanent-id",
            };
            labels.insert(key.into(), json!(uid(rng)));
        }

        let mut spec = Map::new();
        spec.insert("resource".into(), Value::Object(resource));

        let mut replicas = 0i64;
        if res.workload() {
            replicas = match rng.below(20) {
                0 => 0,
                1 => rng.range(31, 200),
                _ => rng.range(1, 30),
            };
            if replicas > 0 {
                spec.insert("replicas".into(), json!(replicas));
            }
            if rng.percent(70) || replicas == 0 {
                spec.insert(
                    "replicaRequirements".into(),
                    gen_requirements(rng, mix, namespace),
                );
            }
        }

        let strategy = match rng.below(20) {
            0..=2 => Strategy::Null,
            3..=5 => Strategy::Duplicated,
            6..=10 => Strategy::Aggregated,
            11..=14 => Strategy::DynamicWeight,
            15..=17 => Strategy::StaticList,
            _ => Strategy::WeightedNoPreference,
        };

        let mut placement = Map::new();
        let mut status = Map::new();
        match rng.below(20) {
            0..=6 => {}
            7..=13 => {
                let a = gen_affinity(rng, mix, names, zones);
                placement.insert("clusterAffinity".into(), a);
            }
            _ => {
                let (terms, term_names) = gen_terms(rng, mix, names, zones, strategy);
                placement.insert("clusterAffinities".into(), terms);
                if mix == Mix::Oracle {
                    match rng.below(20) {
                        0..=7 => {}
                        8..=16 => {
                            let observed = json!(rng.pick(&term_names));
                            status.insert("schedulerObservingAffinityName".into(), observed);
                        }
                        _ => {
                            let retired = json!("retired");
                            status.insert("schedulerObservingAffinityName".into(), retired);
                        }
                    }
                }
            }
        }
        if rng.percent(35) {
            placement.insert("clusterTolerations".into(), gen_tolerations(rng));
        }
        if rng.percent(mix.p(50, 25)) {
            placement.insert("spreadConstraints".into(), gen_spread(rng, mix));
        }
        if let Some(rs) = gen_strategy(rng, mix, strategy, names) {
            placement.insert("replicaScheduling".into(), rs);
        }
        // present-but-empty lists, which a stored object can carry (CRDs keep `[]`)
        if rng.percent(mix.p(3, 0)) && !placement.contains_key("clusterAffinity") {
            // "present" clusterAffinities with no term at all: the driver loop never runs (not
            // in the bench: once it has scheduled such a binding, Go v1.18.2 panics on the
            // next cluster event, in `enqueueAffectedBindings`)
            placement.insert("clusterAffinities".into(), json!([]));
        }
        for field in ["clusterTolerations", "spreadConstraints"] {
            if rng.percent(3) && !placement.contains_key(field) {
                placement.insert(field.into(), json!([]));
            }
        }
        if rng.percent(mix.p(4, 0)) && !placement.contains_key("clusterAffinities") {
            // read only for clusterAffinities; harmless noise otherwise
            status.insert("schedulerObservingAffinityName".into(), json!("primary"));
        }
        if res.workload() && !crb && rng.percent(mix.p(0, 10)) {
            let by = json!({"affinity": {"groupByLabelKey": "app.group"}});
            placement.insert("workloadAffinity".into(), by);
            let group = format!("app.group=grp-{}", rng.below(20));
            spec.insert(
                "workloadAffinityGroups".into(),
                json!({ "affinityGroup": group }),
            );
        }
        spec.insert("placement".into(), Value::Object(placement));

        if rng.percent(mix.p(50, 0)) {
            spec.insert(
                "clusters".into(),
                gen_previous(rng, names, replicas, strategy, res.workload()),
            );
        }
        if rng.percent(mix.p(10, 0)) {
            let from = rng.pick(names).clone();
            // v1.18's deprecated values (still in stored objects) and the ones both versions admit.
            let purge_mode = [
                "Graciously",
                "Immediately",
                "Gracefully",
                "Directly",
                "Never",
            ][rng.below(5)];
            spec.insert(
                "gracefulEvictionTasks".into(),
                json!([{
                    "fromCluster": from,
                    "reason": "TaintUntolerated",
                    "producer": "TaintManager",
                    "purgeMode": purge_mode,
                }]),
            );
        }
        if mix == Mix::Oracle {
            gen_reschedule(rng, &mut spec, &mut status);
        }
        BindingTemplate {
            namespace: (!crb).then(|| namespace.to_string()),
            name,
            labels: Value::Object(labels),
            spec: Value::Object(spec),
            status: Value::Object(status),
            strategy: if res.workload() {
                strategy.label()
            } else {
                "non-workload"
            },
        }
    }
}

fn gen_models(rng: &mut Rng) -> Value {
    let cpu = ["0", "1", "2", "4", "8", "16"];
    let mem = ["0", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi"];
    let grades = rng.range(2, 5) as usize;
    let with_mem = rng.percent(70);
    let models: Vec<Value> = (0..grades)
        .map(|g| {
            let mut ranges = vec![json!({"name": "cpu", "min": cpu[g], "max": cpu[g + 1]})];
            if with_mem {
                ranges.push(json!({"name": "memory", "min": mem[g], "max": mem[g + 1]}));
            }
            json!({"grade": g, "ranges": ranges})
        })
        .collect();
    Value::Array(models)
}

/// How many nodes of each model grade a cluster has (up to `max` each).
fn gen_modelings(rng: &mut Rng, max: i64) -> Value {
    let modelings: Vec<Value> = (0..rng.range(1, 4))
        .map(|g| json!({"grade": g, "count": rng.range(0, max)}))
        .collect();
    Value::Array(modelings)
}

/// The oracle's resource summaries: every field optional, quantities in every format.
fn gen_summary(rng: &mut Rng, models: bool) -> Value {
    let mut s = Map::new();
    let mut alloc = Map::new();
    if rng.percent(95) {
        alloc.insert(
            "pods".into(),
            json!(rng.pick(&["0", "3", "5", "8", "12", "20", "40", "110", "250", "1k"])),
        );
    }
    if rng.percent(85) {
        alloc.insert(
            "cpu".into(),
            json!(rng.pick(&["2", "4", "8", "16", "7500m", "32", "1e1", "2.5", "12000m"])),
        );
    }
    if rng.percent(85) {
        alloc.insert(
            "memory".into(),
            json!(rng.pick(&[
                "4Gi",
                "8Gi",
                "16Gi",
                "32Gi",
                "16G",
                "64000Mi",
                "8e9",
                "12.5Gi",
                "16777216Ki",
            ])),
        );
    }
    if rng.percent(15) {
        alloc.insert("nvidia.com/gpu".into(), json!(rng.pick(&["1", "2", "4"])));
    }
    if rng.percent(10) {
        alloc.insert("ephemeral-storage".into(), json!("100Gi"));
    }
    s.insert("allocatable".into(), Value::Object(alloc));
    if rng.percent(50) {
        let mut used = Map::new();
        if rng.percent(70) {
            used.insert("pods".into(), json!(rng.pick(&["1", "2", "5", "10"])));
        }
        if rng.percent(60) {
            used.insert("cpu".into(), json!(rng.pick(&["500m", "1", "1500m", "3"])));
        }
        if rng.percent(60) {
            used.insert(
                "memory".into(),
                json!(rng.pick(&["1Gi", "2Gi", "4Gi", "2G"])),
            );
        }
        s.insert("allocated".into(), Value::Object(used));
    }
    if rng.percent(20) {
        let mut pending = Map::new();
        if rng.percent(70) {
            pending.insert("pods".into(), json!(rng.pick(&["1", "3"])));
        }
        if rng.percent(50) {
            pending.insert("cpu".into(), json!(rng.pick(&["250m", "1"])));
        }
        s.insert("allocating".into(), Value::Object(pending));
    }
    // modelings usually come with models; sometimes alone (the model path then errors and
    // the summary-based estimate is used)
    if (models && rng.percent(85)) || rng.percent(8) {
        s.insert("allocatableModelings".into(), gen_modelings(rng, 4));
    }
    Value::Object(s)
}

/// The bench's resource summaries: whole nodes, part of them in use, memory in Gi, Mi or G.
/// Returns the summary and the number of nodes.
fn gen_capacity(rng: &mut Rng, models: bool) -> (Value, i64) {
    let nodes = rng.range(3, 120);
    let cpu = nodes * *rng.pick(&[4i64, 8, 16, 32, 64]);
    let mem_gi = cpu * *rng.pick(&[2i64, 4, 8]);
    let mem = match rng.below(3) {
        0 => format!("{mem_gi}Gi"),
        1 => format!("{}Mi", mem_gi * 1024),
        _ => format!("{}G", mem_gi * 1074 / 1000),
    };
    let used = rng.range(10, 95);
    let pods = nodes * 110;
    let mut summary = json!({
        "allocatable": {"cpu": cpu.to_string(), "memory": mem, "pods": pods.to_string()},
        "allocated": {
            "cpu": format!("{}m", cpu * 1000 * used / 100),
            "memory": format!("{}Mi", mem_gi * 1024 * rng.range(10, 95) / 100),
            "pods": (pods * used / 200).to_string(),
        },
    });
    if rng.percent(20) {
        let cpu = format!("{}m", rng.range(0, 4000));
        summary["allocating"] = json!({"cpu": cpu, "memory": "2Gi", "pods": "4"});
    }
    if models {
        summary["allocatableModelings"] = gen_modelings(rng, nodes);
    }
    (summary, nodes)
}

/// What kind of object the binding references.
#[derive(Clone, Copy, PartialEq)]
enum Res {
    Deployment,
    StatefulSet,
    Job,
    ConfigMap,
    ClusterRole,
    Namespace,
    Widget,
}

impl Res {
    fn api(self) -> (&'static str, &'static str) {
        match self {
            Res::Deployment => ("apps/v1", "Deployment"),
            Res::StatefulSet => ("apps/v1", "StatefulSet"),
            Res::Job => ("batch/v1", "Job"),
            Res::ConfigMap => ("v1", "ConfigMap"),
            Res::ClusterRole => ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            Res::Namespace => ("v1", "Namespace"),
            Res::Widget => ("example.io/v1", "Widget"),
        }
    }
    fn workload(self) -> bool {
        matches!(
            self,
            Res::Deployment | Res::StatefulSet | Res::Job | Res::Widget
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Strategy {
    Null,
    Duplicated,
    Aggregated,
    DynamicWeight,
    StaticList,
    WeightedNoPreference,
}

impl Strategy {
    fn divided(self) -> bool {
        !matches!(self, Strategy::Null | Strategy::Duplicated)
    }
    fn allows_overflow(self) -> bool {
        matches!(self, Strategy::Aggregated | Strategy::DynamicWeight)
    }
    fn label(self) -> &'static str {
        match self {
            Strategy::Null => "none",
            Strategy::Duplicated => "duplicated",
            Strategy::Aggregated => "aggregated",
            Strategy::DynamicWeight => "dynamic-weight",
            Strategy::StaticList => "static-weight",
            Strategy::WeightedNoPreference => "weighted-no-preference",
        }
    }
}

fn uid(rng: &mut Rng) -> String {
    let h = |rng: &mut Rng, n: usize| -> String {
        (0..n)
            .map(|_| char::from_digit(rng.below(16) as u32, 16).unwrap())
            .collect()
    };
    format!(
        "{}-{}-{}-{}-{}",
        h(rng, 8),
        h(rng, 4),
        h(rng, 4),
        h(rng, 4),
        h(rng, 12)
    )
}

/// A requested reschedule and the last schedule it is compared with, in every order.
fn gen_reschedule(rng: &mut Rng, spec: &mut Map<String, Value>, status: &mut Map<String, Value>) {
    let (triggered, scheduled) = match rng.below(20) {
        0..=13 => (None, None),
        // an explicit reschedule request after the last schedule: fresh mode
        14..=15 => (Some(TIME_B), Some(TIME_A)),
        16 => (Some(TIME_A), Some(TIME_B)),
        17 => (Some(TIME_A), Some(TIME_A)),
        18 => (Some(TIME_B), None),
        _ => (None, Some(TIME_A)),
    };
    if let Some(t) = triggered {
        spec.insert("rescheduleTriggeredAt".into(), json!(t));
    }
    if let Some(t) = scheduled {
        status.insert("lastScheduledTime".into(), json!(t));
    }
}

fn gen_requirements(rng: &mut Rng, mix: Mix, namespace: &str) -> Value {
    let mut req = Map::new();
    let mut rr = Map::new();
    if rng.percent(75) {
        rr.insert(
            "cpu".into(),
            json!(rng.pick(&[
                "100m", "250m", "500m", "1", "1500m", "2", "0.5", "1e-1", "333m"
            ])),
        );
    }
    if rng.percent(65) {
        rr.insert(
            "memory".into(),
            json!(rng.pick(&[
                "128Mi",
                "512Mi",
                "1Gi",
                "2Gi",
                "1G",
                "3Gi",
                "1.5Gi",
                "5e8",
                "700M",
                "1000000Ki",
            ])),
        );
    }
    // the bench's clusters report neither, so no cluster could take such a replica
    if rng.percent(mix.p(8, 0)) {
        rr.insert("nvidia.com/gpu".into(), json!("1"));
    }
    if rng.percent(mix.p(5, 0)) {
        rr.insert("ephemeral-storage".into(), json!("1Gi"));
    }
    if !rr.is_empty() {
        req.insert("resourceRequest".into(), Value::Object(rr));
    }
    if rng.percent(10) {
        req.insert(
            "nodeClaim".into(),
            json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
        );
    }
    if rng.percent(30) && !namespace.is_empty() {
        req.insert("namespace".into(), json!(namespace));
    }
    if rng.percent(10) {
        req.insert("priorityClassName".into(), json!("high"));
    }
    Value::Object(req)
}

/// A ClusterAffinity (possibly empty, which matches every cluster).
fn gen_affinity(rng: &mut Rng, mix: Mix, names: &[String], zones: &[String]) -> Value {
    let mut a = Map::new();
    fill_affinity(rng, mix, names, zones, &mut a, false);
    Value::Object(a)
}

fn fill_affinity(
    rng: &mut Rng,
    mix: Mix,
    names: &[String],
    zones: &[String],
    a: &mut Map<String, Value>,
    non_empty: bool,
) {
    let named = rng.percent(45);
    if named {
        // the bench's lists name more of its many clusters
        let (min, max) = (mix.p(1, 3) as usize, mix.p(3, 10) as usize);
        let mut list = rng.choose(names, min, max);
        if rng.percent(10) {
            list.push("ghost".to_string());
        }
        a.insert("clusterNames".into(), json!(list));
    }
    if rng.percent(15) {
        a.insert("exclude".into(), json!(rng.choose(names, 1, 2)));
    }
    // in the bench, names stand alone: few of a handful of clusters match a selector as well
    let selector = |p: u32| if named { mix.p(p, 0) } else { p };
    if rng.percent(selector(35)) {
        a.insert("labelSelector".into(), gen_label_selector(rng, mix));
    }
    if rng.percent(3) {
        a.insert("clusterNames".into(), json!([]));
    }
    if rng.percent(3) {
        a.insert(
            "fieldSelector".into(),
            if rng.percent(50) {
                json!({})
            } else {
                json!({"matchExpressions": []})
            },
        );
    }
    // in the bench, a field selector stands alone too: two selectors of one or two expressions
    // each rarely leave a cluster of a handful
    let field = if a.contains_key("labelSelector") {
        mix.p(30, 0)
    } else {
        30
    };
    if rng.percent(selector(field)) {
        a.insert("fieldSelector".into(), gen_field_selector(rng, mix, zones));
    }
    // the webhook's notion of an empty affinity (overflow affinities need a non-empty one)
    let list_set = |a: &Map<String, Value>, k: &str| {
        a.get(k)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    };
    let empty = !a.contains_key("labelSelector")
        && !a.contains_key("fieldSelector")
        && !list_set(a, "clusterNames")
        && !list_set(a, "exclude");
    if non_empty && empty {
        a.insert("clusterNames".into(), json!(rng.choose(names, 1, 2)));
    }
}

fn gen_label_selector(rng: &mut Rng, mix: Mix) -> Value {
    let labels = mix.labels();
    let mut sel = Map::new();
    if rng.percent(50) {
        let (k, vs) = rng.pick(labels);
        sel.insert("matchLabels".into(), json!({ *k: rng.pick(vs) }));
    }
    // the bench's selectors hold one requirement: the oracle's often contradict themselves
    if rng.percent(mix.p(60, 0)) || sel.is_empty() && rng.percent(80) {
        let mut exprs = Vec::new();
        for _ in 0..rng.range(1, mix.p(2, 1).into()) {
            let (k, vs) = rng.pick(labels);
            let e = match rng.below(4) {
                0 => json!({"key": k, "operator": "In", "values": rng.choose(vs, 1, 2)}),
                1 => json!({"key": k, "operator": "NotIn", "values": rng.choose(vs, 1, 2)}),
                2 => json!({"key": k, "operator": "Exists"}),
                _ => json!({"key": k, "operator": "DoesNotExist"}),
            };
            exprs.push(e);
        }
        sel.insert("matchExpressions".into(), Value::Array(exprs));
    }
    Value::Object(sel)
}

fn gen_field_selector(rng: &mut Rng, mix: Mix, zones: &[String]) -> Value {
    let mut exprs = Vec::new();
    for _ in 0..rng.range(1, mix.p(2, 1).into()) {
        let op = if rng.percent(65) { "In" } else { "NotIn" };
        let e = match rng.below(3) {
            0 => json!({"key": "provider", "operator": op, "values": rng.choose(PROVIDERS, 1, 2)}),
            1 => json!({"key": "region", "operator": op, "values": rng.choose(REGIONS, 1, 2)}),
            _ => json!({"key": "zone", "operator": op, "values": rng.choose(zones, 1, 2)}),
        };
        exprs.push(e);
    }
    json!({ "matchExpressions": exprs })
}

fn gen_terms(
    rng: &mut Rng,
    mix: Mix,
    names: &[String],
    zones: &[String],
    strategy: Strategy,
) -> (Value, Vec<String>) {
    let all = ["primary", "secondary", "backup.example.io/tertiary"];
    let n = rng.range(1, 3) as usize;
    let mut terms = Vec::new();
    let mut term_names = Vec::new();
    for name in all.iter().take(n) {
        let mut t = Map::new();
        t.insert("affinityName".into(), json!(name));
        let overflow = strategy.allows_overflow() && rng.percent(45);
        fill_affinity(rng, mix, names, zones, &mut t, overflow);
        if overflow {
            let overflows: Vec<Value> = (0..rng.range(1, 2))
                .map(|k| {
                    let mut o = Map::new();
                    o.insert(
                        "affinityName".into(),
                        json!(format!("{}-spill{k}", name.rsplit('/').next().unwrap())),
                    );
                    fill_affinity(rng, mix, names, zones, &mut o, false);
                    Value::Object(o)
                })
                .collect();
            t.insert("overflowAffinities".into(), Value::Array(overflows));
        }
        terms.push(Value::Object(t));
        term_names.push(name.to_string());
    }
    (Value::Array(terms), term_names)
}

fn gen_tolerations(rng: &mut Rng) -> Value {
    let mut out = Vec::new();
    for _ in 0..rng.range(1, 2) {
        let mut t = Map::new();
        match rng.below(4) {
            0 => {
                // wildcard: empty key with Exists tolerates every taint (of the effect)
                t.insert("operator".into(), json!("Exists"));
            }
            1 => {
                t.insert("key".into(), json!(rng.pick(TAINT_KEYS)));
                t.insert("operator".into(), json!("Exists"));
            }
            2 => {
                t.insert("key".into(), json!(rng.pick(TAINT_KEYS)));
                t.insert("operator".into(), json!("Equal"));
                t.insert("value".into(), json!(rng.pick(TAINT_VALUES)));
            }
            _ => {
                // operator omitted means Equal
                t.insert("key".into(), json!(rng.pick(TAINT_KEYS)));
                let v = *rng.pick(TAINT_VALUES);
                if !v.is_empty() {
                    t.insert("value".into(), json!(v));
                }
            }
        }
        if rng.percent(70) {
            t.insert(
                "effect".into(),
                json!(rng.pick(&["NoSchedule", "NoExecute"])),
            );
        }
        if rng.percent(10) {
            t.insert("tolerationSeconds".into(), json!(300));
        }
        out.push(Value::Object(t));
    }
    Value::Array(out)
}

/// Spread constraints the webhook accepts: one per field, a cluster constraint whenever a field
/// is used, minGroups >= 1 (the webhook's default for 0), maxGroups 0 or >= minGroups.
fn gen_spread(rng: &mut Rng, mix: Mix) -> Value {
    // by label: the scheduler supports only cluster and region, so it always fails
    if rng.percent(mix.p(3, 0)) {
        return json!([{"spreadByLabel": "topology.example.io/rack", "minGroups": 1, "maxGroups": 2}]);
    }
    let mut fields = vec!["cluster"];
    match rng.below(10) {
        0..=4 => {}
        5..=7 => fields.push("region"),
        8 => fields.push(if rng.percent(50) { "zone" } else { "provider" }),
        _ => {
            fields.push("region");
            fields.push(if rng.percent(50) { "zone" } else { "provider" });
        }
    }
    rng.shuffle(&mut fields);
    let cons: Vec<Value> = fields
        .iter()
        .map(|f| {
            // the bench's affinities often name three clusters, one of which may be tainted
            let min = if *f == "cluster" {
                rng.range(1, mix.p(3, 2).into())
            } else if mix == Mix::Bench && !rng.percent(25) {
                // two regions in one bench constraint in eight: few clusters span two
                1
            } else {
                rng.range(1, 2)
            };
            // maxGroups 0 selects no cluster at all
            let max = if rng.percent(mix.p(4, 0)) {
                0
            } else {
                min + rng.range(0, 2)
            };
            json!({"spreadByField": f, "minGroups": min, "maxGroups": max})
        })
        .collect();
    Value::Array(cons)
}

fn gen_strategy(rng: &mut Rng, mix: Mix, strategy: Strategy, names: &[String]) -> Option<Value> {
    Some(match strategy {
        Strategy::Null => return None,
        Strategy::Duplicated => json!({"replicaSchedulingType": "Duplicated"}),
        Strategy::Aggregated => {
            json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"})
        }
        Strategy::DynamicWeight => json!({
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"},
        }),
        Strategy::WeightedNoPreference => {
            if rng.percent(25) {
                // an empty preference: static weighting with no rule, spread constraints kept
                json!({
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {},
                })
            } else {
                json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"})
            }
        }
        Strategy::StaticList => {
            let rules: Vec<Value> = (0..rng.range(1, 3))
                .map(|_| {
                    let target = if rng.percent(70) {
                        json!({"clusterNames": rng.choose(names, 1, 2)})
                    } else {
                        json!({"labelSelector": gen_label_selector(rng, mix)})
                    };
                    let weight = match rng.below(20) {
                        0 => rng.range(100, 100_000),
                        // above 2^53 the f64 priorities of Webster lose integer precision
                        1 => 9_007_199_254_740_993 + rng.range(0, 8),
                        _ => rng.range(1, 5),
                    };
                    json!({"targetCluster": target, "weight": weight})
                })
                .collect();
            let mut wp = json!({ "staticWeightList": rules });
            if rng.percent(10) {
                wp["dynamicWeight"] = json!("AvailableReplicas");
            }
            json!({
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": wp,
            })
        }
    })
}

/// A previous `spec.clusters`: steady, scaled up or scaled down relative to `replicas`.
fn gen_previous(
    rng: &mut Rng,
    names: &[String],
    replicas: i64,
    strategy: Strategy,
    workload: bool,
) -> Value {
    let mut targets = rng.choose(names, 1, 3);
    if rng.percent(5) {
        targets.push("ghost".to_string());
    }
    if !workload || (replicas == 0 && rng.percent(50)) {
        return Value::Array(targets.iter().map(|n| json!({ "name": n })).collect());
    }
    if replicas == 0 {
        // a workload scaled to zero that still runs somewhere
        return Value::Array(
            targets
                .iter()
                .map(|n| json!({"name": n, "replicas": rng.range(1, 10)}))
                .collect(),
        );
    }
    if !strategy.divided() {
        return Value::Array(
            targets
                .iter()
                .map(|n| {
                    let r = if rng.percent(80) {
                        replicas
                    } else {
                        rng.range(1, 30)
                    };
                    json!({"name": n, "replicas": r})
                })
                .collect(),
        );
    }
    let total = match rng.below(3) {
        0 => replicas,
        1 => (replicas - rng.range(1, 10)).max(targets.len() as i64),
        _ => replicas + rng.range(1, 10),
    };
    // split `total` over the targets, every share >= 1 when possible
    let k = targets.len() as i64;
    let mut shares = vec![0i64; targets.len()];
    let mut left = total;
    for (i, s) in shares.iter_mut().enumerate() {
        if i as i64 == k - 1 {
            *s = left;
        } else {
            let max = (left - (k - 1 - i as i64)).max(1);
            *s = rng.range(1, max).min(left.max(0));
            left -= *s;
        }
    }
    Value::Array(
        targets
            .iter()
            .zip(shares)
            .map(|(n, r)| {
                if r > 0 {
                    json!({"name": n, "replicas": r})
                } else {
                    json!({ "name": n })
                }
            })
            .collect(),
    )
}

/// Block-style YAML with every string double-quoted (JSON escapes are valid YAML escapes), so
/// no YAML 1.1/1.2 scalar ambiguity can creep in.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    emit(v, 0, &mut out);
    out
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => Some(v.to_string()),
        Value::Array(a) if a.is_empty() => Some("[]".to_string()),
        Value::Object(o) if o.is_empty() => Some("{}".to_string()),
        _ => None,
    }
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    let reserved = matches!(
        k.to_ascii_lowercase().as_str(),
        "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
    );
    if plain && !reserved {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

fn emit(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(o) if !o.is_empty() => {
            for (k, val) in o {
                match scalar(val) {
                    Some(s) => {
                        let _ = writeln!(out, "{pad}{}: {s}", key(k));
                    }
                    None => {
                        let _ = writeln!(out, "{pad}{}:", key(k));
                        emit(val, indent + 2, out);
                    }
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                match scalar(item) {
                    Some(s) => {
                        let _ = writeln!(out, "{pad}- {s}");
                    }
                    None => {
                        let mut inner = String::new();
                        emit(item, indent + 2, &mut inner);
                        // turn the first line's indentation into the sequence dash
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&inner[indent + 2..]);
                    }
                }
            }
        }
        other => {
            let _ = writeln!(out, "{pad}{}", scalar(other).unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_workload_is_seeded_and_sized() {
        let a = generate(42, 20, 200);
        let b = generate(42, 20, 200);
        assert_eq!(a.clusters, b.clusters);
        assert_eq!(a.bindings.len(), 200);
        assert_eq!(
            a.bindings[17].object("", "x"),
            b.bindings[17].object("", "x")
        );
        assert_ne!(generate(43, 20, 200).clusters, a.clusters);
        assert_eq!(a.cluster_names[0], "member1");
    }

    #[test]
    fn bench_workload_has_every_strategy() {
        let w = generate(1, 50, 2000);
        for s in [
            "non-workload",
            "none",
            "duplicated",
            "aggregated",
            "dynamic-weight",
            "static-weight",
            "weighted-no-preference",
        ] {
            assert!(w.bindings.iter().any(|b| b.strategy == s), "{s}");
        }
        let placements = || w.bindings.iter().map(|b| &b.spec["placement"]);
        for field in [
            "clusterAffinity",
            "clusterAffinities",
            "spreadConstraints",
            "clusterTolerations",
            "workloadAffinity",
        ] {
            assert!(placements().any(|p| p.get(field).is_some()), "{field}");
        }
        assert!(w.bindings.iter().any(|b| b.namespace.is_none()));
        assert!(w.bindings.iter().all(|b| b.status == json!({})));
        let o = w.bindings[0].object("-m", "sched");
        assert_eq!(o["spec"]["schedulerName"], "sched");
        assert!(o["metadata"]["name"].as_str().unwrap().ends_with("-m"));
    }
}
