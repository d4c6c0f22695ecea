//! The bindings of the end-to-end tests, in one place: the builders (`binding`,
//! `cluster_binding`, `extra_cluster`), the cases of `e2e_scheduling.rs` and `e2e_explain.rs`,
//! and [`all`], every one of them as a named object with the daemon's expected kind of
//! decision, which `e2e_simulate_parity.rs` runs through both `simulate` and the daemon.
//!
//! The bindings ask for 500m CPU and 256Mi per replica; the clusters they name are the
//! control plane's members (`member1`..`member3`) and [`extra_clusters`].

use serde_json::{Value, json};

/// A Cluster with the status a cluster-status controller would report.
pub fn extra_cluster(name: &str, cpu: &str, labels: Value, taints: Value) -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1", "provider": "local",
                 "region": "edge", "zones": ["edge-1"], "taints": taints},
        "status": {
            "kubernetesVersion": "v1.35.3",
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
                {"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"},
                                                     {"name": "namespaces", "kind": "Namespace"}]}
            ],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                            "message": "cluster is healthy and ready to accept workloads",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "resourceSummary": {
                "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                "allocated": {"cpu": "0", "memory": "0", "pods": "0"}
            }
        }
    })
}

/// The clusters beside the members that [`scheduling_cases`] name: three edge clusters of
/// 8, 4 and 2 CPUs labelled `tier: edge`, and an 8-CPU one tainted `dedicated=gpu:NoSchedule`.
pub fn extra_clusters() -> Vec<Value> {
    [
        ("edge-1", "8", json!({"tier": "edge"}), json!([])),
        ("edge-2", "4", json!({"tier": "edge"}), json!([])),
        ("edge-3", "2", json!({"tier": "edge"}), json!([])),
        (
            "edge-tainted",
            "8",
            json!({"tier": "tainted"}),
            json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        ),
    ]
    .into_iter()
    .map(|(name, cpu, labels, taints)| extra_cluster(name, cpu, labels, taints))
    .collect()
}

/// A labelled ResourceBinding for a Deployment needing 500m CPU per replica.
///
/// Twins (`x-rs` for our scheduler, `x-go` for the Go one) share `spec.resource.uid`: the uid's
/// hash parity decides how Webster ties break, so twins with different uids could legitimately
/// get different placements.
pub fn binding(name: &str, replicas: i32, placement: Value, scheduler: &str) -> Value {
    let twin = name
        .strip_suffix("-rs")
        .or_else(|| name.strip_suffix("-go"))
        .unwrap_or(name);
    json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": name, "uid": format!("{twin}-uid")},
            "replicas": replicas,
            "replicaRequirements": {"resourceRequest": {"cpu": "500m", "memory": "256Mi"}},
            "schedulerName": scheduler,
            "placement": placement
        }
    })
}

/// A labelled ClusterResourceBinding for a Namespace.
pub fn cluster_binding(name: &str, placement: Value, scheduler: &str) -> Value {
    json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ClusterResourceBinding",
        "metadata": {"name": name,
                     "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": format!("{name}-id")}},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "Namespace", "name": name},
            "schedulerName": scheduler,
            "placement": placement
        }
    })
}

/// `e2e_scheduling.rs`' twin cases, (twin name, replicas, placement): one per strategy and
/// outcome, over the members and [`extra_clusters`].
pub fn scheduling_cases() -> Vec<(&'static str, i32, Value)> {
    vec![
        (
            "dup",
            2,
            json!({
                "clusterAffinity": {"labelSelector": {"matchLabels": {"tier": "edge"}}},
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
            }),
        ),
        (
            "static",
            7,
            json!({
                "clusterAffinity": {"clusterNames": ["edge-1", "edge-2", "edge-3"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["edge-1"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["edge-2", "edge-3"]}, "weight": 2}
                    ]}}
            }),
        ),
        (
            "dynamic",
            6,
            json!({
                "clusterAffinity": {"clusterNames": ["member1", "member2", "edge-1"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
            }),
        ),
        (
            "aggregated",
            5,
            json!({
                "clusterAffinity": {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["edge"]}]}},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
            }),
        ),
        (
            "spread",
            4,
            json!({
                "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 2}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
            }),
        ),
        (
            "failover",
            3,
            json!({
                "clusterAffinities": [
                    {"affinityName": "nowhere", "clusterNames": ["no-such-cluster"]},
                    {"affinityName": "edge", "clusterNames": ["edge-2"]}
                ],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
            }),
        ),
        (
            "nofit",
            2,
            json!({
                "clusterAffinity": {"clusterNames": ["no-such-cluster"]},
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
            }),
        ),
        (
            "toomany",
            100000,
            json!({
                "clusterAffinity": {"clusterNames": ["edge-1", "edge-2"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
            }),
        ),
        (
            "tainted",
            1,
            json!({
                "clusterAffinity": {"clusterNames": ["edge-tainted"]},
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
            }),
        ),
    ]
}

/// `e2e_scheduling.rs`' cluster-scoped twin cases, (twin name, placement).
pub fn scheduling_crb_cases() -> Vec<(&'static str, Value)> {
    vec![
        (
            "crb-dup",
            json!({"clusterAffinity": {"clusterNames": ["edge-1", "edge-2"]}}),
        ),
        (
            "crb-nofit",
            json!({"clusterAffinity": {"clusterNames": ["no-such-cluster"]}}),
        ),
    ]
}

/// `e2e_explain.rs`' cases, (name, replicas, placement): one per replica strategy over the
/// three members, and one that fits nowhere.
pub fn explain_cases() -> Vec<(&'static str, i32, Value)> {
    let members = json!({"clusterNames": ["member1", "member2", "member3"]});
    vec![
        (
            "x-dup",
            2,
            json!({"clusterAffinity": members, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
        ),
        (
            "x-dynamic",
            6,
            json!({"clusterAffinity": members, "replicaScheduling": {"replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted", "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
        ),
        (
            "x-aggregated",
            5,
            json!({"clusterAffinity": members, "replicaScheduling": {"replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Aggregated"}}),
        ),
        (
            "x-static",
            4,
            json!({"clusterAffinity": members, "replicaScheduling": {"replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted", "weightPreference": {"staticWeightList": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["member2"]}, "weight": 3}]}}}),
        ),
        (
            "x-nofit",
            1,
            json!({"clusterAffinity": {"clusterNames": ["nowhere"]}}),
        ),
    ]
}

/// `e2e_explain.rs`' workload-group cases (gate `WorkloadAffinity`), as (peer, bindings):
/// the peer is already placed (`spec.clusters` on one member, pinned there by its placement so
/// that scheduling it again gives the same), and each binding of the group may go to any
/// member, so where it lands depends on the group index alone: `wa-follow` shares the
/// peer's affinity group (only member2), `wa-avoid` its anti-affinity group (not member1).
pub fn workload_group_cases() -> Vec<(Value, Value)> {
    let grouped = |name: &str, placed: Option<&str>, groups: Value| {
        let members = match placed {
            Some(m) => json!([m]),
            None => json!(["member1", "member2", "member3"]),
        };
        let placement = json!({"clusterAffinity": {"clusterNames": members},
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
        let mut b = binding(name, 1, placement, "default-scheduler");
        b["spec"]["workloadAffinityGroups"] = groups;
        if let Some(m) = placed {
            b["spec"]["clusters"] = json!([{"name": m, "replicas": 1}]);
        }
        b
    };
    vec![
        (
            grouped("wa-peer", Some("member2"), json!({"affinityGroup": "wa"})),
            grouped("wa-follow", None, json!({"affinityGroup": "wa"})),
        ),
        (
            grouped(
                "wa-anti-peer",
                Some("member1"),
                json!({"antiAffinityGroup": "wa-anti"}),
            ),
            grouped("wa-avoid", None, json!({"antiAffinityGroup": "wa-anti"})),
        ),
    ]
}

/// What the daemon (`--scheduler-name=default-scheduler`) is expected to do with a fixture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Its ladder schedules the binding and it writes the result.
    Acts,
    /// It writes nothing: the ladder finds the result up to date, the binding is being
    /// deleted, or the event filter never queues it.
    NoAction,
    /// Its ladder finds the result up to date but the observed generation behind: it only
    /// records the generation as observed (a status write, no scheduling).
    SyncGeneration,
}

/// One binding of the end-to-end tests, as created.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub name: String,
    /// The object to apply; a `status` in it goes to the status subresource.
    pub object: Value,
    pub expect: Expect,
    /// Delete it after creating it (it holds a finalizer, so it stays, being deleted).
    pub delete: bool,
}

impl Fixture {
    fn new(object: Value, expect: Expect) -> Self {
        Fixture {
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            object,
            expect,
            delete: false,
        }
    }

    /// `ResourceBinding` or `ClusterResourceBinding`.
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }
}

/// The finalizer that keeps [`no_action_cases`]' `na-deleting` in place once deleted.
pub const HOLD_FINALIZER: &str = "testenv.karmada.io/hold";

/// A Divided/Aggregated 2-replica binding on `member1` with the result the daemon would have
/// written: `spec.clusters`, the applied-placement annotation, a `Scheduled` condition and
/// `schedulerObservedGeneration` = `observed` (the generation after a create is 1).
fn already_scheduled(name: &str, observed: i64) -> Value {
    let placement = json!({"clusterAffinity": {"clusterNames": ["member1"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}});
    let mut b = binding(name, 2, placement.clone(), "default-scheduler");
    b["metadata"]["annotations"] =
        json!({"policy.karmada.io/applied-placement": placement.to_string()});
    b["spec"]["clusters"] = json!([{"name": "member1", "replicas": 2}]);
    let mut status = json!({"conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
        "message": "Binding has been scheduled successfully.",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    if observed > 0 {
        status["schedulerObservedGeneration"] = json!(observed);
    }
    b["status"] = status;
    b
}

/// Bindings the daemon leaves alone (or only records as observed), one per way the decision
/// ladder or the event filter skips one.
pub fn no_action_cases() -> Vec<Fixture> {
    let aggregated = json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}});
    let mut suspended = binding("na-suspended", 2, aggregated.clone(), "default-scheduler");
    suspended["spec"]["suspension"] = json!({"scheduling": true});
    let mut unlabelled = binding("na-unlabelled", 2, aggregated.clone(), "default-scheduler");
    unlabelled["metadata"]["labels"] = json!({});
    let mut deleting = binding("na-deleting", 2, aggregated.clone(), "default-scheduler");
    deleting["metadata"]["finalizers"] = json!([HOLD_FINALIZER]);
    let mut deleting = Fixture::new(deleting, Expect::NoAction);
    deleting.delete = true;
    vec![
        Fixture::new(already_scheduled("na-uptodate", 1), Expect::NoAction),
        Fixture::new(
            already_scheduled("na-unobserved", 0),
            Expect::SyncGeneration,
        ),
        Fixture::new(
            binding(
                "na-other-scheduler",
                2,
                aggregated.clone(),
                "other-scheduler",
            ),
            Expect::NoAction,
        ),
        Fixture::new(
            cluster_binding(
                "na-crb-other-scheduler",
                json!({"clusterAffinity": {"clusterNames": ["member1"]}}),
                "other-scheduler",
            ),
            Expect::NoAction,
        ),
        Fixture::new(suspended, Expect::NoAction),
        Fixture::new(unlabelled, Expect::NoAction),
        deleting,
    ]
}

/// Every fixture binding for `--scheduler-name=default-scheduler`: the cases of
/// [`scheduling_cases`] and [`scheduling_crb_cases`] (as their `-rs` twins), of
/// [`explain_cases`], and [`no_action_cases`]. Needs the three members and
/// [`extra_clusters`].
pub fn all() -> Vec<Fixture> {
    let mut out = Vec::new();
    for (name, replicas, placement) in scheduling_cases() {
        let b = binding(
            &format!("{name}-rs"),
            replicas,
            placement,
            "default-scheduler",
        );
        out.push(Fixture::new(b, Expect::Acts));
    }
    for (name, placement) in scheduling_crb_cases() {
        let b = cluster_binding(&format!("{name}-rs"), placement, "default-scheduler");
        out.push(Fixture::new(b, Expect::Acts));
    }
    for (name, replicas, placement) in explain_cases() {
        let b = binding(name, replicas, placement, "default-scheduler");
        out.push(Fixture::new(b, Expect::Acts));
    }
    out.extend(no_action_cases());
    out
}

/// A list of `{name, replicas}` target clusters (as in `spec.clusters`, a `simulate` result or
/// an explanation) as `(name, replicas)` pairs in the list's order; empty when `v` is not a
/// list.
pub fn placement_in(v: &Value) -> Vec<(String, i64)> {
    v.as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}
