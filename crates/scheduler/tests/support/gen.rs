//! Seeded generator of random but valid scheduling inputs for the differential test.
//!
//! Everything produced here is what the upstream webhooks and CRD defaulting would let into the
//! API server, and it stays away from the few places where upstream
//! leaves the outcome to chance. Most files have at most 12 clusters, so
//! every replica list that Go sorts with `sort.Sort` is insertion-sorted (stable); one file in
//! ten has 13 to 16, where Go's pdqsort is deterministic but unstable.
//!
//! Objects are built as `serde_json::Value`s and written with a tiny YAML emitter that
//! double-quotes every string, so no YAML 1.1/1.2 scalar ambiguity can creep in.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use testenv::rng::SplitMix64;

/// [`SplitMix64`] with the draws the generator makes.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64(seed))
    }

    /// A generator for item `index` of the run seeded with `seed`, independent of the others,
    /// so that one input file can be regenerated on its own.
    pub fn derive(seed: u64, index: u64) -> Self {
        let mut r = Rng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }

    /// Each element kept with probability `percent`/100, input order kept.
    pub fn subset<T: Clone>(&mut self, xs: &[T], percent: u32) -> Vec<T> {
        xs.iter()
            .filter(|_| self.chance(percent))
            .cloned()
            .collect()
    }

    /// Between `min` and `max` distinct elements, in random order.
    pub fn sample<T: Clone>(&mut self, xs: &[T], min: usize, max: usize) -> Vec<T> {
        let mut v = xs.to_vec();
        self.shuffle(&mut v);
        let max = max.min(v.len());
        let min = min.min(max);
        let n = self.range(min as i64, max as i64) as usize;
        v.truncate(n);
        v
    }
}

/// One input file: clusters, bindings, and the `--estimator-replicas` answers.
pub struct Case {
    pub clusters: Vec<Value>,
    pub bindings: Vec<Value>,
    pub estimator: BTreeMap<String, i32>,
}

impl Case {
    /// The multi-document YAML that `simulate -f` and the oracle read.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for (i, obj) in self.clusters.iter().chain(self.bindings.iter()).enumerate() {
            if i > 0 {
                out.push_str("---\n");
            }
            out.push_str(&to_yaml(obj));
        }
        out
    }

    /// The `--estimator-replicas` flags, sorted by cluster name.
    pub fn estimator_args(&self) -> Vec<String> {
        self.estimator
            .iter()
            .flat_map(|(c, n)| ["--estimator-replicas".to_string(), format!("{c}={n}")])
            .collect()
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
const APIS: &[(&str, &[(&str, &str)])] = &[
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

struct ClusterFacts {
    name: String,
    zones: Vec<String>,
}

/// Generates one input file with `bindings` bindings.
pub fn generate(rng: &mut Rng, bindings: usize) -> Case {
    let pool = match rng.below(10) {
        0 => STYLE_C,
        1..=6 => STYLE_A,
        _ => STYLE_B,
    };
    let n = if pool.len() > 12 {
        // more than 12 entries: Go's sort.Sort leaves insertion sort for pdqsort, which is
        // deterministic but not stable (the port must match it entry for entry)
        rng.range(13, pool.len() as i64)
    } else if rng.chance(20) {
        rng.range(1, 3)
    } else {
        rng.range(2, 12)
    } as usize;
    let names: Vec<String> = rng
        .sample(pool, n, n)
        .into_iter()
        .map(String::from)
        .collect();

    let mut facts = Vec::new();
    let mut clusters = Vec::new();
    for name in &names {
        let (c, f) = gen_cluster(rng, name);
        clusters.push(c);
        facts.push(f);
    }

    let mut estimator = BTreeMap::new();
    match rng.below(10) {
        0..=4 => {}
        5..=7 => {
            for f in &facts {
                estimator.insert(f.name.clone(), rng.range(0, 30) as i32);
            }
        }
        _ => {
            for f in rng.sample(
                &facts.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
                1,
                n,
            ) {
                estimator.insert(f, rng.range(0, 30) as i32);
            }
        }
    }

    let bindings = (0..bindings).map(|i| gen_binding(rng, i, &facts)).collect();
    Case {
        clusters,
        bindings,
        estimator,
    }
}

fn gen_cluster(rng: &mut Rng, name: &str) -> (Value, ClusterFacts) {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    let mut labels = Map::new();
    for (k, vs) in LABELS {
        if rng.chance(55) {
            labels.insert((*k).into(), json!(rng.pick(vs)));
        }
    }
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if rng.chance(5) {
        metadata.insert("deletionTimestamp".into(), json!(TIME_A));
        metadata.insert(
            "finalizers".into(),
            json!(["karmada.io/cluster-controller"]),
        );
    }

    let mut spec = Map::new();
    spec.insert(
        "syncMode".into(),
        json!(if rng.chance(80) { "Push" } else { "Pull" }),
    );
    if rng.chance(80) {
        spec.insert("provider".into(), json!(rng.pick(PROVIDERS)));
    }
    let mut zones = Vec::new();
    if rng.chance(85) {
        let region = *rng.pick(REGIONS);
        spec.insert("region".into(), json!(region));
        if rng.chance(75) {
            let all: Vec<String> = ["a", "b", "c"]
                .iter()
                .map(|s| format!("{region}{s}"))
                .collect();
            zones = rng.sample(&all, 1, 2);
        }
    } else if rng.chance(30) {
        zones = vec!["zone-x".to_string()];
    } else if rng.chance(20) {
        // only the legacy singular field, which the algorithm never reads
        spec.insert("zone".into(), json!("legacy-zone"));
    }
    if !zones.is_empty() {
        spec.insert("zones".into(), json!(zones));
        if rng.chance(30) {
            spec.insert("zone".into(), json!(zones[0]));
        }
    }
    let mut taints = Vec::new();
    for _ in 0..rng.range(0, 2) {
        if rng.chance(50) {
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
    let models = rng.chance(30);
    if models {
        spec.insert("resourceModels".into(), gen_models(rng));
    }

    let mut status = Map::new();
    let mut enablements = Vec::new();
    let full = rng.chance(80);
    for (gv, resources) in APIS {
        let kept: Vec<Value> = resources
            .iter()
            .filter(|_| full || rng.chance(60))
            .map(|(r, k)| json!({"name": r, "kind": k}))
            .collect();
        if !kept.is_empty() {
            enablements.push(json!({"groupVersion": gv, "resources": kept}));
        }
    }
    if !enablements.is_empty() || rng.chance(50) {
        status.insert("apiEnablements".into(), Value::Array(enablements));
    }
    let mut conditions = vec![json!({
        "type": "Ready",
        "status": if rng.chance(85) { "True" } else { "False" },
        "reason": "ClusterReady",
        "message": "cluster is healthy and ready to accept workloads",
        "lastTransitionTime": TIME_A,
    })];
    if rng.chance(30) {
        conditions.push(json!({
            "type": "CompleteAPIEnablements",
            "status": if full { "True" } else { "False" },
            "reason": "Complete",
            "message": "",
            "lastTransitionTime": TIME_A,
        }));
    }
    status.insert("conditions".into(), Value::Array(conditions));
    if rng.chance(90) {
        status.insert("resourceSummary".into(), gen_summary(rng, models));
    }

    let obj = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    });
    (
        obj,
        ClusterFacts {
            name: name.to_string(),
            zones,
        },
    )
}

fn gen_models(rng: &mut Rng) -> Value {
    let cpu = ["0", "1", "2", "4", "8", "16"];
    let mem = ["0", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi"];
    let grades = rng.range(2, 5) as usize;
    let with_mem = rng.chance(70);
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

fn gen_summary(rng: &mut Rng, models: bool) -> Value {
    let mut s = Map::new();
    let mut alloc = Map::new();
    if rng.chance(95) {
        alloc.insert(
            "pods".into(),
            json!(rng.pick(&["0", "3", "5", "8", "12", "20", "40", "110", "250", "1k"])),
        );
    }
    if rng.chance(85) {
        alloc.insert(
            "cpu".into(),
            json!(rng.pick(&["2", "4", "8", "16", "7500m", "32", "1e1", "2.5", "12000m"])),
        );
    }
    if rng.chance(85) {
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
    if rng.chance(15) {
        alloc.insert("nvidia.com/gpu".into(), json!(rng.pick(&["1", "2", "4"])));
    }
    if rng.chance(10) {
        alloc.insert("ephemeral-storage".into(), json!("100Gi"));
    }
    s.insert("allocatable".into(), Value::Object(alloc));
    if rng.chance(50) {
        let mut used = Map::new();
        if rng.chance(70) {
            used.insert("pods".into(), json!(rng.pick(&["1", "2", "5", "10"])));
        }
        if rng.chance(60) {
            used.insert("cpu".into(), json!(rng.pick(&["500m", "1", "1500m", "3"])));
        }
        if rng.chance(60) {
            used.insert(
                "memory".into(),
                json!(rng.pick(&["1Gi", "2Gi", "4Gi", "2G"])),
            );
        }
        s.insert("allocated".into(), Value::Object(used));
    }
    if rng.chance(20) {
        let mut pending = Map::new();
        if rng.chance(70) {
            pending.insert("pods".into(), json!(rng.pick(&["1", "3"])));
        }
        if rng.chance(50) {
            pending.insert("cpu".into(), json!(rng.pick(&["250m", "1"])));
        }
        s.insert("allocating".into(), Value::Object(pending));
    }
    // modelings usually come with models; sometimes alone (the model path then errors and
    // the summary-based estimate is used)
    if (models && rng.chance(85)) || rng.chance(8) {
        let modelings: Vec<Value> = (0..rng.range(1, 4))
            .map(|g| json!({"grade": g, "count": rng.range(0, 4)}))
            .collect();
        s.insert("allocatableModelings".into(), Value::Array(modelings));
    }
    Value::Object(s)
}

/// What kind of object the binding references.
#[derive(Clone, Copy, PartialEq)]
enum Res {
    Deployment,
    StatefulSet,
    Job,
    ConfigMap,
    ClusterRole,
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
        matches!(
            self,
            Strategy::Aggregated
                | Strategy::DynamicWeight
                | Strategy::StaticList
                | Strategy::WeightedNoPreference
        )
    }
    fn allows_overflow(self) -> bool {
        matches!(self, Strategy::Aggregated | Strategy::DynamicWeight)
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

fn gen_binding(rng: &mut Rng, index: usize, facts: &[ClusterFacts]) -> Value {
    let names: Vec<String> = facts.iter().map(|f| f.name.clone()).collect();
    let crb = rng.chance(15);
    let res = if crb {
        if rng.chance(50) {
            Res::ClusterRole
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
    let name = format!("b{index:03}");
    let namespace = if crb {
        ""
    } else if rng.chance(70) {
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
    resource.insert("name".into(), json!(format!("app-{index:03}")));
    if rng.chance(50) {
        resource.insert("uid".into(), json!(uid(rng)));
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
        if rng.chance(70) || replicas == 0 {
            spec.insert(
                "replicaRequirements".into(),
                gen_requirements(rng, namespace),
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
            placement.insert("clusterAffinity".into(), gen_affinity(rng, &names, facts));
        }
        _ => {
            let (terms, term_names) = gen_terms(rng, &names, facts, strategy);
            placement.insert("clusterAffinities".into(), terms);
            match rng.below(20) {
                0..=7 => {}
                8..=16 => {
                    status.insert(
                        "schedulerObservingAffinityName".into(),
                        json!(rng.pick(&term_names)),
                    );
                }
                _ => {
                    status.insert("schedulerObservingAffinityName".into(), json!("retired"));
                }
            }
        }
    }
    if rng.chance(35) {
        placement.insert("clusterTolerations".into(), gen_tolerations(rng));
    }
    if rng.chance(50) {
        placement.insert("spreadConstraints".into(), gen_spread(rng));
    }
    if let Some(rs) = gen_strategy(rng, strategy, &names) {
        placement.insert("replicaScheduling".into(), rs);
    }
    // present-but-empty lists, which a stored object can carry (CRDs keep `[]`)
    if rng.chance(3) && !placement.contains_key("clusterAffinity") {
        // "present" clusterAffinities with no term at all: the driver loop never runs
        placement.insert("clusterAffinities".into(), json!([]));
    }
    for field in ["clusterTolerations", "spreadConstraints"] {
        if rng.chance(3) && !placement.contains_key(field) {
            placement.insert(field.into(), json!([]));
        }
    }
    if rng.chance(4) && !placement.contains_key("clusterAffinities") {
        // read only for clusterAffinities; harmless noise otherwise
        status.insert("schedulerObservingAffinityName".into(), json!("primary"));
    }
    spec.insert("placement".into(), Value::Object(placement));

    if rng.chance(50) {
        spec.insert(
            "clusters".into(),
            gen_previous(rng, &names, replicas, strategy, res.workload()),
        );
    }
    if rng.chance(10) {
        let from = rng.pick(&names).clone();
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
    match rng.below(20) {
        0..=13 => {}
        14..=15 => {
            // an explicit reschedule request after the last schedule: fresh mode
            spec.insert("rescheduleTriggeredAt".into(), json!(TIME_B));
            status.insert("lastScheduledTime".into(), json!(TIME_A));
        }
        16 => {
            spec.insert("rescheduleTriggeredAt".into(), json!(TIME_A));
            status.insert("lastScheduledTime".into(), json!(TIME_B));
        }
        17 => {
            spec.insert("rescheduleTriggeredAt".into(), json!(TIME_A));
            status.insert("lastScheduledTime".into(), json!(TIME_A));
        }
        18 => {
            spec.insert("rescheduleTriggeredAt".into(), json!(TIME_B));
        }
        _ => {
            status.insert("lastScheduledTime".into(), json!(TIME_A));
        }
    }

    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    if !crb {
        metadata.insert("namespace".into(), json!(namespace));
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!("work.karmada.io/v1alpha2"));
    obj.insert(
        "kind".into(),
        json!(if crb {
            "ClusterResourceBinding"
        } else {
            "ResourceBinding"
        }),
    );
    obj.insert("metadata".into(), Value::Object(metadata));
    obj.insert("spec".into(), Value::Object(spec));
    if !status.is_empty() {
        obj.insert("status".into(), Value::Object(status));
    }
    Value::Object(obj)
}

fn gen_requirements(rng: &mut Rng, namespace: &str) -> Value {
    let mut req = Map::new();
    let mut rr = Map::new();
    if rng.chance(75) {
        rr.insert(
            "cpu".into(),
            json!(rng.pick(&[
                "100m", "250m", "500m", "1", "1500m", "2", "0.5", "1e-1", "333m"
            ])),
        );
    }
    if rng.chance(65) {
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
    if rng.chance(8) {
        rr.insert("nvidia.com/gpu".into(), json!("1"));
    }
    if rng.chance(5) {
        rr.insert("ephemeral-storage".into(), json!("1Gi"));
    }
    if !rr.is_empty() {
        req.insert("resourceRequest".into(), Value::Object(rr));
    }
    if rng.chance(10) {
        req.insert(
            "nodeClaim".into(),
            json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
        );
    }
    if rng.chance(30) && !namespace.is_empty() {
        req.insert("namespace".into(), json!(namespace));
    }
    if rng.chance(10) {
        req.insert("priorityClassName".into(), json!("high"));
    }
    Value::Object(req)
}

/// A ClusterAffinity (possibly empty, which matches every cluster).
fn gen_affinity(rng: &mut Rng, names: &[String], facts: &[ClusterFacts]) -> Value {
    let mut a = Map::new();
    fill_affinity(rng, names, facts, &mut a, false);
    Value::Object(a)
}

fn fill_affinity(
    rng: &mut Rng,
    names: &[String],
    facts: &[ClusterFacts],
    a: &mut Map<String, Value>,
    non_empty: bool,
) {
    if rng.chance(45) {
        let mut list = rng.sample(names, 1, 3);
        if rng.chance(10) {
            list.push("ghost".to_string());
        }
        a.insert("clusterNames".into(), json!(list));
    }
    if rng.chance(15) {
        a.insert("exclude".into(), json!(rng.sample(names, 1, 2)));
    }
    if rng.chance(35) {
        a.insert("labelSelector".into(), gen_label_selector(rng));
    }
    if rng.chance(3) {
        a.insert("clusterNames".into(), json!([]));
    }
    if rng.chance(3) {
        a.insert(
            "fieldSelector".into(),
            if rng.chance(50) {
                json!({})
            } else {
                json!({"matchExpressions": []})
            },
        );
    }
    if rng.chance(30) {
        a.insert("fieldSelector".into(), gen_field_selector(rng, facts));
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
        a.insert("clusterNames".into(), json!(rng.sample(names, 1, 2)));
    }
}

fn gen_label_selector(rng: &mut Rng) -> Value {
    let mut sel = Map::new();
    if rng.chance(50) {
        let (k, vs) = rng.pick(LABELS);
        sel.insert("matchLabels".into(), json!({ *k: rng.pick(vs) }));
    }
    if rng.chance(60) || sel.is_empty() && rng.chance(80) {
        let mut exprs = Vec::new();
        for _ in 0..rng.range(1, 2) {
            let (k, vs) = rng.pick(LABELS);
            let e = match rng.below(4) {
                0 => json!({"key": k, "operator": "In", "values": rng.sample(vs, 1, 2)}),
                1 => json!({"key": k, "operator": "NotIn", "values": rng.sample(vs, 1, 2)}),
                2 => json!({"key": k, "operator": "Exists"}),
                _ => json!({"key": k, "operator": "DoesNotExist"}),
            };
            exprs.push(e);
        }
        sel.insert("matchExpressions".into(), Value::Array(exprs));
    }
    Value::Object(sel)
}

fn gen_field_selector(rng: &mut Rng, facts: &[ClusterFacts]) -> Value {
    let mut exprs = Vec::new();
    for _ in 0..rng.range(1, 2) {
        let op = if rng.chance(65) { "In" } else { "NotIn" };
        let e = match rng.below(3) {
            0 => json!({"key": "provider", "operator": op, "values": rng.sample(PROVIDERS, 1, 2)}),
            1 => json!({"key": "region", "operator": op, "values": rng.sample(REGIONS, 1, 2)}),
            _ => {
                let mut zones: Vec<String> = facts.iter().flat_map(|f| f.zones.clone()).collect();
                zones.sort();
                zones.dedup();
                if zones.is_empty() {
                    zones.push("us-east-1a".to_string());
                }
                json!({"key": "zone", "operator": op, "values": rng.sample(&zones, 1, 2)})
            }
        };
        exprs.push(e);
    }
    json!({ "matchExpressions": exprs })
}

fn gen_terms(
    rng: &mut Rng,
    names: &[String],
    facts: &[ClusterFacts],
    strategy: Strategy,
) -> (Value, Vec<String>) {
    let all = ["primary", "secondary", "backup.example.io/tertiary"];
    let n = rng.range(1, 3) as usize;
    let mut terms = Vec::new();
    let mut term_names = Vec::new();
    for name in all.iter().take(n) {
        let mut t = Map::new();
        t.insert("affinityName".into(), json!(name));
        let overflow = strategy.allows_overflow() && rng.chance(45);
        fill_affinity(rng, names, facts, &mut t, overflow);
        if overflow {
            let overflows: Vec<Value> = (0..rng.range(1, 2))
                .map(|k| {
                    let mut o = Map::new();
                    o.insert(
                        "affinityName".into(),
                        json!(format!("{}-spill{k}", name.rsplit('/').next().unwrap())),
                    );
                    fill_affinity(rng, names, facts, &mut o, false);
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
        if rng.chance(70) {
            t.insert(
                "effect".into(),
                json!(rng.pick(&["NoSchedule", "NoExecute"])),
            );
        }
        if rng.chance(10) {
            t.insert("tolerationSeconds".into(), json!(300));
        }
        out.push(Value::Object(t));
    }
    Value::Array(out)
}

/// Spread constraints the webhook accepts: one per field, a cluster constraint whenever a field
/// is used, minGroups >= 1 (the webhook's default for 0), maxGroups 0 or >= minGroups.
fn gen_spread(rng: &mut Rng) -> Value {
    if rng.chance(3) {
        return json!([{"spreadByLabel": "topology.example.io/rack", "minGroups": 1, "maxGroups": 2}]);
    }
    let mut fields = vec!["cluster"];
    match rng.below(10) {
        0..=4 => {}
        5..=7 => fields.push("region"),
        8 => fields.push(if rng.chance(50) { "zone" } else { "provider" }),
        _ => {
            fields.push("region");
            fields.push(if rng.chance(50) { "zone" } else { "provider" });
        }
    }
    rng.shuffle(&mut fields);
    let cons: Vec<Value> = fields
        .iter()
        .map(|f| {
            let min = if *f == "cluster" {
                rng.range(1, 3)
            } else {
                rng.range(1, 2)
            };
            let max = if rng.chance(4) {
                0
            } else {
                min + rng.range(0, 2)
            };
            json!({"spreadByField": f, "minGroups": min, "maxGroups": max})
        })
        .collect();
    Value::Array(cons)
}

fn gen_strategy(rng: &mut Rng, strategy: Strategy, names: &[String]) -> Option<Value> {
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
            if rng.chance(25) {
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
                    let target = if rng.chance(70) {
                        json!({"clusterNames": rng.sample(names, 1, 2)})
                    } else {
                        json!({"labelSelector": gen_label_selector(rng)})
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
            if rng.chance(10) {
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
    let mut targets = rng.sample(names, 1, 3);
    if rng.chance(5) {
        targets.push("ghost".to_string());
    }
    if !workload || (replicas == 0 && rng.chance(50)) {
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
                    let r = if rng.chance(80) {
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

/// Block-style YAML with every string double-quoted (JSON escapes are valid YAML escapes).
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
