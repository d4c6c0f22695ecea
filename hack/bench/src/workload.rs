//! The seeded workload: Cluster objects (with the status a cluster-status controller would
//! report) and binding specs that mix every replica strategy, affinities, affinity terms,
//! spread constraints, tolerations and replica counts.
//!
//! Everything here is data: JSON values in the shape the v1.18.2 CRDs accept. The same seed
//! gives the same workload.

use serde_json::{Value, json};

use crate::rng::Rng;

/// Namespaces the ResourceBindings live in.
pub const NAMESPACES: &[&str] = &["bench-a", "bench-b", "bench-c", "bench-d"];

const PROVIDERS: &[(&str, &[&str])] = &[
    (
        "aws",
        &["us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1"],
    ),
    ("gcp", &["us-central1", "europe-west4", "asia-east1"]),
    ("azure", &["eastus", "westeurope", "japaneast"]),
    ("alibaba", &["cn-hangzhou", "cn-beijing"]),
    ("onprem", &["dc-paris", "dc-frankfurt"]),
];
const ENVS: &[&str] = &["prod", "staging", "dev"];
const TIERS: &[&str] = &["gold", "silver", "bronze"];
const TEAMS: &[&str] = &["payments", "search", "ml", "web", "data", "infra"];

/// One generated binding, without its scheduler name.
#[derive(Clone, Debug)]
pub struct BindingTemplate {
    /// `None` for a ClusterResourceBinding.
    pub namespace: Option<String>,
    pub name: String,
    pub labels: Value,
    /// `spec` without `schedulerName` and `clusters`.
    pub spec: Value,
    /// Short description of the strategy, for disagreement reports.
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

    /// The object to create: `name + suffix`, owned by `scheduler`.
    pub fn object(&self, suffix: &str, scheduler: &str) -> Value {
        let mut spec = self.spec.clone();
        spec["schedulerName"] = json!(scheduler);
        let mut meta = json!({"name": format!("{}{suffix}", self.name), "labels": self.labels});
        let kind = match &self.namespace {
            Some(ns) => {
                meta["namespace"] = json!(ns);
                "ResourceBinding"
            }
            None => "ClusterResourceBinding",
        };
        json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": meta, "spec": spec})
    }
}

/// The whole workload.
pub struct Workload {
    pub clusters: Vec<Value>,
    pub cluster_names: Vec<String>,
    pub bindings: Vec<BindingTemplate>,
}

/// Generates `clusters` Cluster objects and `bindings` binding templates from `seed`.
pub fn generate(seed: u64, clusters: usize, bindings: usize) -> Workload {
    let root = Rng::new(seed);
    let mut crng = root.fork("clusters");
    let cluster_values: Vec<Value> = (0..clusters).map(|i| cluster(&mut crng, i)).collect();
    let cluster_names: Vec<String> = cluster_values
        .iter()
        .map(|c| {
            c["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let mut brng = root.fork("bindings");
    let bindings = (0..bindings)
        .map(|j| binding(&mut brng, j, &cluster_names))
        .collect();
    Workload {
        clusters: cluster_values,
        cluster_names,
        bindings,
    }
}

/// The name of cluster `i` (from 0), as `hack/local-up.sh` names the members, so that the
/// members of a small run are clusters of the workload.
pub fn cluster_name(i: usize) -> String {
    format!("member{}", i + 1)
}

fn cluster(rng: &mut Rng, i: usize) -> Value {
    let name = cluster_name(i);
    let (provider, regions) = PROVIDERS[rng.weighted(&[35, 25, 20, 10, 10])];
    let region = *rng.pick(regions);
    let zone_count = rng.weighted(&[5, 35, 35, 25]);
    let zones: Vec<String> = (0..zone_count)
        .map(|z| format!("{region}{}", ["a", "b", "c"][z]))
        .collect();
    let env = ENVS[rng.weighted(&[50, 30, 20])];
    let gpu = rng.chance(0.15);
    let mut labels = json!({
        "env": env,
        "tier": rng.pick(TIERS),
        "team": rng.pick(TEAMS),
        "bench.karmada.io/index": i.to_string(),
        "topology.kubernetes.io/region": region,
    });
    if gpu {
        labels["gpu"] = json!("true");
    }
    if rng.chance(0.1) {
        labels["edge"] = json!("true");
    }

    let mut taints = Vec::new();
    if gpu && rng.chance(0.6) {
        taints.push(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}));
    }
    if rng.chance(0.05) {
        taints.push(json!({"key": "maintenance", "effect": "PreferNoSchedule"}));
    }
    if rng.chance(0.02) {
        taints.push(json!({"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}));
    }
    if rng.chance(0.01) {
        taints.push(json!({"key": "cluster.karmada.io/unreachable", "effect": "NoExecute"}));
    }

    // Capacity: nodes x node size, in several quantity formats.
    let nodes = rng.range(3, 120);
    let node_cpu = *rng.pick(&[4i64, 8, 16, 32, 64]);
    let cpu = nodes * node_cpu;
    let mem_gi = cpu * *rng.pick(&[2i64, 4, 8]);
    let mem = match rng.below(3) {
        0 => format!("{mem_gi}Gi"),
        1 => format!("{}Mi", mem_gi * 1024),
        _ => format!("{}G", mem_gi * 1074 / 1000),
    };
    let used = rng.range(10, 95);
    let alloc_cpu_m = cpu * 1000 * used / 100;
    let alloc_mem_mi = mem_gi * 1024 * rng.range(10, 95) / 100;
    let pods = nodes * 110;
    let mut summary = json!({
        "allocatable": {"cpu": cpu.to_string(), "memory": mem, "pods": pods.to_string()},
        "allocated": {"cpu": format!("{alloc_cpu_m}m"), "memory": format!("{alloc_mem_mi}Mi"),
                      "pods": (pods * used / 200).to_string()},
    });
    if rng.chance(0.2) {
        summary["allocating"] =
            json!({"cpu": format!("{}m", rng.range(0, 4000)), "memory": "2Gi", "pods": "4"});
    }

    let mut spec = json!({
        "syncMode": if rng.chance(0.8) { "Push" } else { "Pull" },
        "apiEndpoint": "https://127.0.0.1:1",
        "provider": provider,
        "region": region,
        "zones": zones,
        "taints": taints,
    });
    if rng.chance(0.2) {
        // Resource models and the counts per grade, as the cluster-status controller reports.
        spec["resourceModels"] = json!([
            {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}, {"name": "memory", "min": "0", "max": "4Gi"}]},
            {"grade": 1, "ranges": [{"name": "cpu", "min": "1", "max": "2"}, {"name": "memory", "min": "4Gi", "max": "16Gi"}]},
            {"grade": 2, "ranges": [{"name": "cpu", "min": "2", "max": "4"}, {"name": "memory", "min": "16Gi", "max": "32Gi"}]},
            {"grade": 3, "ranges": [{"name": "cpu", "min": "4", "max": "128"}, {"name": "memory", "min": "32Gi", "max": "1024Gi"}]},
        ]);
        summary["allocatableModelings"] = json!([
            {"grade": 0, "count": rng.range(0, 40)},
            {"grade": 1, "count": rng.range(0, 40)},
            {"grade": 2, "count": rng.range(0, 20)},
            {"grade": 3, "count": rng.range(0, nodes)},
        ]);
    }

    let mut apis = vec![
        json!({"groupVersion": "v1", "resources": [
            {"name": "pods", "kind": "Pod"}, {"name": "configmaps", "kind": "ConfigMap"},
            {"name": "services", "kind": "Service"}, {"name": "namespaces", "kind": "Namespace"}]}),
        json!({"groupVersion": "apps/v1", "resources": [
            {"name": "deployments", "kind": "Deployment"}, {"name": "statefulsets", "kind": "StatefulSet"}]}),
        json!({"groupVersion": "rbac.authorization.k8s.io/v1", "resources": [
            {"name": "clusterroles", "kind": "ClusterRole"}]}),
    ];
    if rng.chance(0.9) {
        apis.push(
            json!({"groupVersion": "batch/v1", "resources": [{"name": "jobs", "kind": "Job"}]}),
        );
    }
    if rng.chance(0.5) {
        apis.push(json!({"groupVersion": "example.io/v1", "resources": [{"name": "widgets", "kind": "Widget"}]}));
    }
    let ts = "2026-01-01T00:00:00Z";
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "kubernetesVersion": "v1.35.3",
            "apiEnablements": apis,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "ClusterReady",
                 "message": "cluster is healthy and ready to accept workloads", "lastTransitionTime": ts},
                {"type": "CompleteAPIEnablements", "status": "True", "reason": "CompleteAPIEnablements",
                 "message": "collected complete APIEnablements from the cluster", "lastTransitionTime": ts},
            ],
            "nodeSummary": {"totalNum": nodes, "readyNum": nodes},
            "resourceSummary": summary,
        }
    })
}

/// A cluster affinity: label/field selectors, names (some that do not exist), exclusions.
fn affinity(rng: &mut Rng, names: &[String]) -> Value {
    let some_names = |rng: &mut Rng, k: usize| -> Vec<String> {
        let mut v: Vec<String> = rng
            .sample(names.len(), k)
            .into_iter()
            .map(|i| names[i].clone())
            .collect();
        if rng.chance(0.3) {
            v.push(cluster_name(names.len() + rng.below(5) as usize));
        }
        v
    };
    match rng.weighted(&[25, 15, 15, 12, 10, 10, 8, 5]) {
        0 => json!({"labelSelector": {"matchLabels": {"env": rng.pick(ENVS)}}}),
        1 => json!({"labelSelector": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["gold", "silver"]}]}}),
        2 => {
            let (p, regions) = *rng.pick(PROVIDERS);
            if rng.chance(0.5) {
                json!({"fieldSelector": {"matchExpressions": [
                    {"key": "provider", "operator": "In", "values": [p, rng.pick(PROVIDERS).0]}]}})
            } else {
                json!({"fieldSelector": {"matchExpressions": [
                    {"key": "region", "operator": "NotIn", "values": [rng.pick(regions)]}]}})
            }
        }
        3 => {
            let k = rng.range(3, 10) as usize;
            json!({"clusterNames": some_names(rng, k)})
        }
        4 => json!({"labelSelector": {"matchLabels": {"team": rng.pick(TEAMS)}}}),
        5 => {
            let k = rng.range(1, 3) as usize;
            json!({"labelSelector": {"matchLabels": {"env": "prod"}}, "exclude": some_names(rng, k)})
        }
        6 => json!({"labelSelector": {"matchExpressions": [
            {"key": "edge", "operator": "DoesNotExist"},
            {"key": "env", "operator": "NotIn", "values": ["dev"]}]}}),
        _ => json!({}),
    }
}

fn tolerations(rng: &mut Rng) -> Value {
    match rng.weighted(&[70, 15, 8, 4, 3]) {
        0 => json!([]),
        1 => {
            json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
        }
        2 => json!([{"key": "maintenance", "operator": "Exists"}]),
        3 => {
            json!([{"key": "cluster.karmada.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}])
        }
        _ => json!([{"operator": "Exists"}]),
    }
}

fn spread(rng: &mut Rng, duplicated: bool) -> Value {
    let p = if duplicated { 0.15 } else { 0.25 };
    if !rng.chance(p) {
        return json!([]);
    }
    match rng.below(4) {
        0 => json!([{"spreadByField": "cluster", "minGroups": 2, "maxGroups": rng.range(3, 6)}]),
        1 => json!([
            {"spreadByField": "region", "minGroups": 2, "maxGroups": 3},
            {"spreadByField": "cluster", "minGroups": 2, "maxGroups": rng.range(4, 8)}]),
        2 => json!([
            {"spreadByField": "zone", "minGroups": 1, "maxGroups": 3},
            {"spreadByField": "cluster", "minGroups": 1, "maxGroups": rng.range(3, 6)}]),
        _ => json!([
            {"spreadByField": "provider", "minGroups": 1, "maxGroups": 2},
            {"spreadByField": "cluster", "minGroups": 1, "maxGroups": rng.range(2, 5)}]),
    }
}

fn binding(rng: &mut Rng, j: usize, names: &[String]) -> BindingTemplate {
    // Template kind: workloads and non-workloads, namespaced and cluster-scoped.
    let (api_version, kind, workload, cluster_scoped) =
        match rng.weighted(&[55, 12, 8, 5, 10, 5, 5]) {
            0 => ("apps/v1", "Deployment", true, false),
            1 => ("apps/v1", "StatefulSet", true, false),
            2 => ("batch/v1", "Job", true, false),
            3 => ("example.io/v1", "Widget", true, false),
            4 => ("v1", "ConfigMap", false, false),
            5 => ("rbac.authorization.k8s.io/v1", "ClusterRole", false, true),
            _ => ("v1", "Namespace", false, true),
        };
    let name = format!("{}-{j:06}", kind.to_ascii_lowercase());
    let namespace = (!cluster_scoped).then(|| NAMESPACES[j % NAMESPACES.len()].to_string());
    let label_key = match (cluster_scoped, rng.chance(0.05)) {
        (_, true) => "binding.karmada.io/managed-by",
        (true, false) => "clusterpropagationpolicy.karmada.io/permanent-id",
        (false, false) => "propagationpolicy.karmada.io/permanent-id",
    };
    let labels = json!({ label_key: rng.uuid() });
    let mut resource =
        json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": rng.uuid()});
    if let Some(ns) = &namespace {
        resource["namespace"] = json!(ns);
    }
    let mut spec = json!({"resource": resource});

    let mut placement = json!({});
    let tol = tolerations(rng);
    if tol.as_array().is_some_and(|a| !a.is_empty()) {
        placement["clusterTolerations"] = tol;
    }
    let strategy;
    if !workload {
        strategy = "non-workload";
        placement["clusterAffinity"] = affinity(rng, names);
        if rng.chance(0.5) {
            placement["replicaScheduling"] = json!({"replicaSchedulingType": "Duplicated"});
        }
        let s = spread(rng, true);
        if s.as_array().is_some_and(|a| !a.is_empty()) {
            placement["spreadConstraints"] = s;
        }
    } else {
        let replicas = match rng.weighted(&[60, 30, 10]) {
            0 => rng.range(1, 5),
            1 => rng.range(6, 20),
            _ => rng.range(21, 100),
        };
        spec["replicas"] = json!(replicas);
        if !rng.chance(0.05) {
            let cpu = *rng.pick(&["100m", "250m", "500m", "1", "2", "4"]);
            let mem = *rng.pick(&["128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi"]);
            let mut rr = json!({"resourceRequest": {"cpu": cpu, "memory": mem}});
            if rng.chance(0.1) {
                rr["nodeClaim"] = json!({"nodeSelector": {"kubernetes.io/os": "linux"}});
            }
            if let Some(ns) = &namespace {
                rr["namespace"] = json!(ns);
            }
            spec["replicaRequirements"] = rr;
        }
        let kind_of = rng.weighted(&[20, 5, 15, 20, 15, 5, 10]);
        let (rs, duplicated) = match kind_of {
            0 => (Some(json!({"replicaSchedulingType": "Duplicated"})), true),
            1 => (None, true),
            2 => (
                Some(
                    json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}),
                ),
                false,
            ),
            3 | 6 => (
                Some(
                    json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                            "weightPreference": {"dynamicWeight": "AvailableReplicas"}}),
                ),
                false,
            ),
            4 => {
                let list = match rng.below(3) {
                    0 => json!([
                        {"targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}}, "weight": 3},
                        {"targetCluster": {"labelSelector": {"matchLabels": {"env": "staging"}}}, "weight": 1}]),
                    1 => json!([
                        {"targetCluster": {"fieldSelector": {"matchExpressions": [
                            {"key": "provider", "operator": "In", "values": ["aws"]}]}}, "weight": 2},
                        {"targetCluster": {"fieldSelector": {"matchExpressions": [
                            {"key": "provider", "operator": "In", "values": ["gcp", "azure"]}]}}, "weight": 1}]),
                    _ => {
                        let picked = rng.sample(names.len(), 3);
                        json!(
                            picked
                                .iter()
                                .enumerate()
                                .map(|(k, i)| json!(
                            {"targetCluster": {"clusterNames": [names[*i]]}, "weight": k + 1}))
                                .collect::<Vec<_>>()
                        )
                    }
                };
                (
                    Some(
                        json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"staticWeightList": list}}),
                    ),
                    false,
                )
            }
            _ => (
                Some(
                    json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}),
                ),
                false,
            ),
        };
        if let Some(rs) = rs {
            placement["replicaScheduling"] = rs;
        }
        strategy = match kind_of {
            0 | 1 => "duplicated",
            2 => "aggregated",
            3 => "dynamic-weight",
            4 => "static-weight",
            5 => "weighted-no-preference",
            _ => "affinity-terms",
        };
        if kind_of == 6 {
            // Ordered affinity terms (failover): a narrow first term, a wider second one.
            let mut terms = vec![];
            let n = rng.range(2, 3);
            for t in 0..n {
                let mut term = affinity(rng, names);
                term["affinityName"] = json!(format!("term-{t}"));
                terms.push(term);
            }
            placement["clusterAffinities"] = json!(terms);
        } else {
            placement["clusterAffinity"] = affinity(rng, names);
        }
        let s = spread(rng, duplicated);
        if s.as_array().is_some_and(|a| !a.is_empty()) {
            placement["spreadConstraints"] = s;
        }
        if !cluster_scoped && rng.chance(0.1) {
            placement["workloadAffinity"] = json!({"affinity": {"groupByLabelKey": "app.group"}});
            spec["workloadAffinityGroups"] =
                json!({"affinityGroup": format!("app.group=grp-{}", rng.below(20))});
        }
    }
    spec["placement"] = placement;
    BindingTemplate {
        namespace,
        name,
        labels,
        spec,
        strategy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_sized() {
        let a = generate(42, 20, 200);
        let b = generate(42, 20, 200);
        assert_eq!(a.clusters, b.clusters);
        assert_eq!(a.bindings.len(), 200);
        assert_eq!(
            a.bindings[17].object("", "x"),
            b.bindings[17].object("", "x")
        );
        assert_ne!(generate(43, 20, 200).clusters, a.clusters);
    }

    #[test]
    fn every_strategy_appears() {
        let w = generate(1, 50, 2000);
        for s in [
            "non-workload",
            "duplicated",
            "aggregated",
            "dynamic-weight",
            "static-weight",
            "weighted-no-preference",
            "affinity-terms",
        ] {
            assert!(w.bindings.iter().any(|b| b.strategy == s), "{s}");
        }
        assert!(w.bindings.iter().any(|b| b.namespace.is_none()));
        let o = w.bindings[0].object("-m", "sched");
        assert_eq!(o["spec"]["schedulerName"], "sched");
        assert!(o["metadata"]["name"].as_str().unwrap().ends_with("-m"));
    }
}
