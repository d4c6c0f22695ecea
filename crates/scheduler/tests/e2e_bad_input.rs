//! Bad input end to end, on a real control plane: the `karmada-scheduler` binary (as its own
//! process) and the Go karmada-scheduler v1.18.2 are given twin bindings (identical except name
//! and `spec.schedulerName`, see `common::binding`), good ones mixed with bad ones:
//!
//! * (a) static weights: negative and zero weights are rejected by the CRD (`minimum: 1`), so
//!   they never reach a scheduler — the rejection is asserted; weights the CRD accepts but whose
//!   int64 sum wraps to 0 reach both schedulers;
//! * (b) spread constraints: an unknown `spreadByField` is rejected by the CRD enum (asserted);
//!   CRD-valid values the scheduler cannot select by (`zone`, label only) and group counts that
//!   validation webhooks would have refused reach both schedulers;
//! * (c) no (or an empty) cluster affinity while every cluster carries a NoSchedule taint the
//!   binding does not tolerate (every cluster is tainted for the whole test; the good bindings
//!   tolerate the taint, the bad ones do not, or through an invalid toleration operator);
//! * (d) replicas no cluster can hold (estimators answer 0);
//! * (e) a value the API server accepts but neither decoder can read: no placement field is
//!   like that (every placement enum is a CRD enum, and the numeric fields are int64 on both
//!   sides), but `spec.replicas` is (`format: int32` is not enforced by the API server);
//! * (f) other validation bypasses: `clusterAffinity` together with `clusterAffinities`,
//!   `Divided` without a division preference, a negative `maxGroups`.
//!
//! Every outcome the schedulers write (`spec.clusters`, applied-placement annotation,
//! `Scheduled` condition, observed generation, affinity name, Events) must be the same on both
//! sides, and must be what the v1.18.2 source says (the expectations below are read from it;
//! the Go twin checks that reading). Good bindings all end up scheduled, the bad ones stay
//! unscheduled, and the Rust process is alive at the end with no panic in its log.
//!
//! Two cases are documented deliberate differences (docs/daemon.md, docs/compatibility.md),
//! where the reference cannot be followed: the reference's informer cannot decode a list that
//! holds the int32-overflowing binding and stops seeing every ResourceBinding until it is
//! deleted (asserted on the Go side), while ours marks that one binding `SchedulerError`; and a
//! negative `maxGroups` makes the reference panic (process exit, asserted), while ours reports
//! an error. Both run last, as they take the Go scheduler out.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use testenv::{GoProcess, TestEnv, tools_or_skip, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;

/// How long twins may take to agree after both have a condition.
const SETTLE: Duration = Duration::from_secs(30);
/// The reflector of the Go scheduler retries a failing list with a backoff of up to 30 s
/// (plus up to 100 % jitter).
const RELIST: Duration = Duration::from_secs(180);

/// Every cluster carries this taint; only the good bindings tolerate it.
const TAINT_KEY: &str = "bad-input-e2e";
const TAINT: &str = "bad-input-e2e=nobody:NoSchedule";
/// All clusters of the environment (2 members with estimators, 3 without).
const CLUSTERS: [&str; 5] = ["edge-1", "edge-2", "edge-3", "member1", "member2"];

/// 2^62: four of these sum to 2^64, which wraps to 0 in int64.
const HUGE_WEIGHT: i64 = 1 << 62;

/// What the v1.18.2 source says the scheduler writes.
enum Expect {
    /// `Scheduled=True`, reason `Success`, non-empty `spec.clusters` (exactly these, if given).
    Scheduled(Option<Value>),
    /// `Scheduled=False` with this reason and message; no target cluster.
    Failed(&'static str, Msg),
}

enum Msg {
    Exact(String),
    /// Starts and ends with these (the middle is a number the estimators decide).
    Between(&'static str, &'static str),
}

struct Case {
    name: &'static str,
    replicas: i32,
    placement: Value,
    /// Replaces `spec.replicaRequirements.resourceRequest`.
    request: Option<Value>,
    expect: Expect,
}

fn toleration() -> Value {
    json!([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}])
}

/// `placement` plus a toleration of the taint every cluster has.
fn tolerant(mut placement: Value) -> Value {
    placement["clusterTolerations"] = toleration();
    placement
}

fn fit_error_all_tainted() -> Msg {
    // Each cluster fails one filter only (TaintToleration), so the text is deterministic even
    // though the reference's filter order is random per process.
    Msg::Exact(format!(
        "0/{n} clusters are available: {n} cluster(s) had untolerated taint {{{TAINT}}}.",
        n = CLUSTERS.len()
    ))
}

fn members() -> Value {
    json!({"clusterNames": ["member1", "member2"]})
}

fn cases() -> Vec<Case> {
    let huge = Some(json!({"cpu": "1000", "memory": "1Ti"}));
    vec![
        // ---- good bindings
        Case {
            name: "good-dup",
            replicas: 2,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})),
            request: None,
            // Candidates come sorted by score, then available replicas (member2 has the bigger
            // nodes), then name.
            expect: Expect::Scheduled(Some(
                json!([{"name": "member2", "replicas": 2}, {"name": "member1", "replicas": 2}]),
            )),
        },
        Case {
            name: "good-agg",
            replicas: 2,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: None,
            expect: Expect::Scheduled(None),
        },
        Case {
            name: "good-dyn",
            replicas: 3,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})),
            request: None,
            expect: Expect::Scheduled(None),
        },
        Case {
            name: "good-static",
            replicas: 6,
            placement: tolerant(json!({"clusterAffinity": {"clusterNames": ["edge-1", "edge-2", "edge-3"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["edge-1"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["edge-2"]}, "weight": 2}]}}})),
            request: None,
            // edge-3 has no weight: left out, not given 0.
            expect: Expect::Scheduled(Some(
                json!([{"name": "edge-1", "replicas": 2}, {"name": "edge-2", "replicas": 4}]),
            )),
        },
        Case {
            name: "good-spread",
            replicas: 4,
            placement: tolerant(json!({
                "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})),
            request: None,
            expect: Expect::Scheduled(None),
        },
        // ---- (a) static weights the CRD accepts: 4 x 2^62 wraps to a sum of 0, so
        // getStaticWeightInfoList appends weight 1 for every candidate after the real entries,
        // and the later entries win in the dispenser's vote map: all five get the same share.
        Case {
            name: "a-weight-overflow",
            replicas: 10,
            placement: tolerant(json!({"clusterAffinity": {"clusterNames": CLUSTERS},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["edge-1", "edge-2", "member1", "member2"]},
                         "weight": HUGE_WEIGHT}]}}})),
            request: None,
            expect: Expect::Scheduled(Some(Value::Array(
                CLUSTERS
                    .iter()
                    .map(|c| json!({"name": c, "replicas": 2}))
                    .collect(),
            ))),
        },
        // ---- (b) spread constraints the CRD accepts but the selection step cannot serve.
        Case {
            name: "b-spread-zone",
            replicas: 2,
            placement: tolerant(json!({
                "spreadConstraints": [{"spreadByField": "zone", "minGroups": 1, "maxGroups": 2}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: None,
            expect: Expect::Failed(
                "SchedulerError",
                Msg::Exact(
                    "failed to select clusters: just support cluster and region spread constraint"
                        .into(),
                ),
            ),
        },
        Case {
            name: "b-spread-label",
            replicas: 2,
            placement: tolerant(json!({
                "spreadConstraints": [{"spreadByLabel": "tier", "minGroups": 1, "maxGroups": 2}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: None,
            expect: Expect::Failed(
                "SchedulerError",
                Msg::Exact(
                    "failed to select clusters: just support cluster and region spread constraint"
                        .into(),
                ),
            ),
        },
        Case {
            // maxGroups has no default: 0 selects 0 clusters.
            name: "b-spread-maxgroups-0",
            replicas: 2,
            placement: tolerant(json!({
                "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: None,
            expect: Expect::Failed(
                "SchedulerError",
                Msg::Exact(
                    "failed to select clusters: no enough resource when selecting 0 clusters"
                        .into(),
                ),
            ),
        },
        Case {
            name: "b-spread-mingroups",
            replicas: 2,
            placement: tolerant(json!({
                "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 9, "maxGroups": 9}],
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: None,
            expect: Expect::Failed(
                "SchedulerError",
                Msg::Exact("failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups".into()),
            ),
        },
        // ---- (c) every cluster tainted, nothing tolerated: NoClusterFit, clusters cleared,
        // not retried.
        Case {
            name: "c-taint-no-affinity",
            replicas: 1,
            placement: json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
            request: None,
            expect: Expect::Failed("NoClusterFit", fit_error_all_tainted()),
        },
        Case {
            name: "c-taint-empty-affinity",
            replicas: 2,
            placement: json!({"clusterAffinity": {},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
            request: None,
            expect: Expect::Failed("NoClusterFit", fit_error_all_tainted()),
        },
        Case {
            // An operator validation would refuse tolerates nothing.
            name: "c-taint-bogus-toleration",
            replicas: 1,
            placement: json!({
                "clusterTolerations": [{"key": TAINT_KEY, "operator": "Bogus", "effect": "NoSchedule"}],
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
            request: None,
            expect: Expect::Failed("NoClusterFit", fit_error_all_tainted()),
        },
        // ---- (d) replicas no cluster can hold. Steady assignment mode, first schedule: a
        // scale up from 0.
        Case {
            name: "d-huge-aggregated",
            replicas: 3,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: huge.clone(),
            expect: Expect::Failed(
                "Unschedulable",
                Msg::Exact("failed to assign replicas: failed to scale up: Clusters available replicas 0 are not enough to schedule.".into()),
            ),
        },
        Case {
            name: "d-huge-dynamic",
            replicas: 3,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})),
            request: huge.clone(),
            expect: Expect::Failed(
                "Unschedulable",
                Msg::Exact("failed to assign replicas: failed to scale up: Clusters available replicas 0 are not enough to schedule.".into()),
            ),
        },
        Case {
            name: "d-max-int32-replicas",
            replicas: i32::MAX,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}})),
            request: None,
            expect: Expect::Failed(
                "Unschedulable",
                Msg::Between(
                    "failed to assign replicas: failed to scale up: Clusters available replicas ",
                    " are not enough to schedule.",
                ),
            ),
        },
        Case {
            // Duplicated never asks whether the replicas fit: the reference schedules it
            // (both estimate 0, so the name decides the order).
            name: "d-huge-duplicated",
            replicas: 3,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})),
            request: huge,
            expect: Expect::Scheduled(Some(
                json!([{"name": "member1", "replicas": 3}, {"name": "member2", "replicas": 3}]),
            )),
        },
        // ---- (f) other validation bypasses.
        Case {
            // The driver takes the clusterAffinities loop (and records the term's name), but
            // the ClusterAffinity filter prefers clusterAffinity when it is set.
            name: "f-both-affinities",
            replicas: 1,
            placement: tolerant(json!({
                "clusterAffinity": {"clusterNames": ["member1"]},
                "clusterAffinities": [{"affinityName": "second", "clusterNames": ["member2"]}],
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})),
            request: None,
            expect: Expect::Scheduled(Some(json!([{"name": "member1", "replicas": 1}]))),
        },
        Case {
            // No webhook defaulted replicaDivisionPreference.
            name: "f-divided-no-preference",
            replicas: 2,
            placement: tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided"}})),
            request: None,
            expect: Expect::Failed(
                "SchedulerError",
                Msg::Exact("failed to assign replicas: unsupported replica scheduling strategy, replicaSchedulingType: Divided, replicaDivisionPreference: , please try another scheduling strategy".into()),
            ),
        },
    ]
}

fn twin_binding(case: &Case, suffix: &str, scheduler: &str) -> Value {
    let mut b = binding(
        &format!("{}-{suffix}", case.name),
        case.replicas,
        case.placement.clone(),
        scheduler,
    );
    if let Some(r) = &case.request {
        b["spec"]["replicaRequirements"]["resourceRequest"] = r.clone();
    }
    b
}

/// Differences between a binding and what the reference writes for it.
fn check(expect: &Expect, name: &str, rb: &DynamicObject) -> Vec<String> {
    let mut out = Vec::new();
    let Some(cond) = scheduled_condition(rb) else {
        return vec![format!("{name}: no Scheduled condition")];
    };
    let clusters = clusters_of(rb);
    let no_clusters = clusters.as_array().is_none_or(Vec::is_empty);
    match expect {
        Expect::Scheduled(want) => {
            if cond["status"] != "True" || cond["reason"] != "Success" {
                out.push(format!(
                    "{name}: expected Scheduled=True/Success, got {cond}"
                ));
            }
            if no_clusters {
                out.push(format!("{name}: scheduled to no cluster"));
            }
            if let Some(want) = want
                && &clusters != want
            {
                out.push(format!(
                    "{name}: spec.clusters\n  got:      {clusters}\n  expected: {want}"
                ));
            }
        }
        Expect::Failed(reason, msg) => {
            let message = cond["message"].as_str().unwrap_or_default();
            let ok = match msg {
                Msg::Exact(m) => message == m,
                Msg::Between(a, b) => message.starts_with(a) && message.ends_with(b),
            };
            if cond["status"] != "False" || cond["reason"] != *reason || !ok {
                let want = match msg {
                    Msg::Exact(m) => m.clone(),
                    Msg::Between(a, b) => format!("{a}…{b}"),
                };
                out.push(format!(
                    "{name}: Scheduled condition\n  got:      {} / {} / {message}\n  expected: False / {reason} / {want}",
                    cond["status"], cond["reason"]
                ));
            }
            if !no_clusters {
                out.push(format!("{name}: a failed binding has clusters {clusters}"));
            }
        }
    }
    out
}

/// The Events about a twin, with its name replaced by the case name and fit diagnoses cut.
async fn twin_events(
    env: &TestEnv,
    kind: &str,
    twin: &str,
    case: &str,
) -> anyhow::Result<Vec<(String, String, String)>> {
    Ok(events_about(env, "default", kind, twin)
        .await?
        .into_iter()
        .map(|(t, r, m)| (t, r, fit_insensitive(&m.replace(twin, case))))
        .collect())
}

/// Compare the Events of twins until they agree (events are written asynchronously).
async fn events_differences(env: &TestEnv, case: &str) -> anyhow::Result<Vec<String>> {
    let (rs, go) = (format!("{case}-rs"), format!("{case}-go"));
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let mut diffs = Vec::new();
        for kind in ["ResourceBinding", "Deployment"] {
            let o = twin_events(env, kind, &rs, case).await?;
            let g = twin_events(env, kind, &go, case).await?;
            if o != g || o.is_empty() {
                diffs.push(format!(
                    "{case}: events on the {kind}\n  ours: {o:?}\n  go:   {g:?}"
                ));
            }
        }
        if diffs.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(diffs);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A Warning `ScheduleBindingFailed` event on the binding carries the condition's message.
async fn has_failure_event(env: &TestEnv, name: &str, message: &str) -> anyhow::Result<bool> {
    let want = fit_insensitive(message);
    Ok(events_about(env, "default", "ResourceBinding", name)
        .await?
        .iter()
        .any(|(t, r, m)| {
            t == "Warning" && r == "ScheduleBindingFailed" && fit_insensitive(m) == want
        }))
}

async fn http_ok(addr: &str, path: &str) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf).await;
    buf.starts_with("HTTP/1.1 200")
}

/// Fail with the end of the Rust scheduler's log (and whether it still runs).
fn ours_explain(ours: &mut GoProcess, e: anyhow::Error) -> anyhow::Error {
    let exited = ours.try_wait().ok().flatten();
    anyhow::anyhow!(
        "{e:#}\n(our scheduler exited: {exited:?}); its log ends with:\n{}",
        ours.log_tail(40)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_reported_like_the_go_scheduler() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("bad_input_is_reported_like_the_go_scheduler") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;

    // Every cluster is tainted before either scheduler starts, so both see the taints in their
    // first list (a taint added after a placement does not move it: TaintToleration skips
    // clusters the binding already targets).
    let taint = json!([{"key": TAINT_KEY, "value": "nobody", "effect": "NoSchedule"}]);
    for (name, cpu) in [("edge-1", "8"), ("edge-2", "4"), ("edge-3", "2")] {
        env.apply_json(&extra_cluster(
            name,
            cpu,
            json!({"tier": "edge"}),
            taint.clone(),
        ))
        .await?;
    }
    let clusters = cluster_api(&env).await?;
    for m in ["member1", "member2"] {
        clusters
            .patch(
                m,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"taints": taint}})),
            )
            .await?;
    }

    let mut go = env.spawn_go_scheduler(&[
        "--enable-scheduler-estimator=true",
        "--scheduler-name=go-scheduler",
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let (mut ours, health) = spawn_ours(&env, testenv::AS_V1_18_2)?;
    let ready = wait_for("our scheduler ready", WAIT, || async {
        Ok(http_ok(&health, "/readyz").await.then_some(()))
    })
    .await;
    if let Err(e) = ready {
        return Err(ours_explain(&mut ours, e));
    }
    let rbs = rb_api(&env).await?;

    // (a), (b): what the CRD refuses never reaches a scheduler.
    let rejected = [
        (
            "a-weight-negative",
            json!({"staticWeightList": [{"targetCluster": {"clusterNames": ["member1"]}, "weight": -1}]}),
            "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight: Invalid value: -1: \
             spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight in body should be greater than or equal to 1",
        ),
        (
            "a-weight-zero",
            json!({"staticWeightList": [{"targetCluster": {"clusterNames": ["member1"]}, "weight": 0}]}),
            "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight: Invalid value: 0: \
             spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight in body should be greater than or equal to 1",
        ),
    ];
    let mut refused: Vec<(&str, Value, &str)> = rejected
        .into_iter()
        .map(|(name, weights, msg)| {
            let p = tolerant(json!({"clusterAffinity": members(),
                "replicaScheduling": {"replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted", "weightPreference": weights}}));
            (name, p, msg)
        })
        .collect();
    refused.push((
        "b-spread-unknown-field",
        tolerant(json!({"spreadConstraints": [{"spreadByField": "planet", "minGroups": 1, "maxGroups": 1}],
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})),
        "spec.placement.spreadConstraints[0].spreadByField: Unsupported value: \"planet\": \
         supported values: \"cluster\", \"region\", \"zone\", \"provider\"",
    ));
    for (name, placement, msg) in refused {
        let b = binding(name, 2, placement, "default-scheduler");
        let Err(e) = env.apply_json(&b).await else {
            panic!("{name}: the API server accepted it");
        };
        let text = format!("{e:#}");
        assert!(
            text.contains(&format!("\"{name}\" is invalid")) && text.contains(msg),
            "{name}: unexpected rejection: {text}"
        );
        assert!(rbs.get_opt(name).await?.is_none(), "{name} exists");
    }

    // Everything the API server accepts, as twins.
    let cases = cases();
    for case in &cases {
        for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
            env.apply_json(&twin_binding(case, suffix, sched))
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e:#}", case.name))?;
        }
    }
    let mut problems: Vec<String> = Vec::new();
    for case in &cases {
        let (rs, go_name) = (format!("{}-rs", case.name), format!("{}-go", case.name));
        if let Err(e) = wait_condition(&rbs, &rs).await {
            return Err(ours_explain(&mut ours, e));
        }
        wait_condition(&rbs, &go_name)
            .await
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", go.log_tail(40)))?;
        problems.extend(settled_differences(&rbs, case.name, &rs, &go_name, SETTLE).await?);
        for name in [&rs, &go_name] {
            let rb = rbs.get(name).await?;
            problems.extend(check(&case.expect, name, &rb));
            if let Expect::Failed(..) = case.expect {
                let message = scheduled_condition(&rb).unwrap()["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let found = wait_for(&format!("failure event on {name}"), SETTLE, || async {
                    Ok(has_failure_event(&env, name, &message).await?.then_some(()))
                })
                .await;
                if found.is_err() {
                    problems.push(format!(
                        "{name}: no Warning ScheduleBindingFailed event with {message:?}"
                    ));
                }
            }
        }
        problems.extend(events_differences(&env, case.name).await?);
    }
    let go_name = "f-both-affinities-go";
    for name in ["f-both-affinities-rs", go_name] {
        let rb = rbs.get(name).await?;
        let observed = rb.data.pointer("/status/schedulerObservingAffinityName");
        if observed != Some(&json!("second")) {
            problems.push(format!("{name}: observed affinity name {observed:?}"));
        }
    }

    // (e) spec.replicas beyond int32: the API server stores it (format int32 is not checked).
    // Ours: that one binding gets SchedulerError and a Warning event (docs/daemon.md). The
    // reference (deliberately not followed): its typed informer cannot decode the list any
    // more and stops seeing every ResourceBinding until the object is gone.
    let mut bad = binding(
        "e-replicas-int32-overflow",
        1,
        tolerant(json!({"clusterAffinity": {"clusterNames": ["member1"]}})),
        "default-scheduler",
    );
    bad["spec"]["replicas"] = json!(3_000_000_000u64);
    env.apply_json(&bad).await?;
    let decode_error = "cannot unmarshal number 3000000000 into Go struct field";
    let cond = match wait_condition(&rbs, "e-replicas-int32-overflow").await {
        Ok(c) => c,
        Err(e) => return Err(ours_explain(&mut ours, e)),
    };
    let message = cond["message"].as_str().unwrap_or_default().to_string();
    if cond["status"] != "False"
        || cond["reason"] != "SchedulerError"
        || !message.starts_with(
            "failed to decode ResourceBinding(default/e-replicas-int32-overflow): spec.replicas: ",
        )
    {
        problems.push(format!("e-replicas-int32-overflow: condition {cond}"));
    }
    let found = wait_for("decode failure event", SETTLE, || async {
        Ok(
            has_failure_event(&env, "e-replicas-int32-overflow", &message)
                .await?
                .then_some(()),
        )
    })
    .await;
    if found.is_err() {
        problems.push("e-replicas-int32-overflow: no Warning ScheduleBindingFailed event".into());
    }
    wait_for("the Go scheduler's decode error", WAIT, || async {
        Ok(log_of(&go).contains(decode_error).then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", go.log_tail(20)))?;
    // Good twins created now: ours schedules its own; the Go one stays unseen while the list
    // keeps failing (a failed relist after the twin exists proves it was not seen).
    let late = Case {
        name: "late",
        replicas: 1,
        placement: tolerant(json!({"clusterAffinity": {"clusterNames": ["member2"]},
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})),
        request: None,
        expect: Expect::Scheduled(Some(json!([{"name": "member2", "replicas": 1}]))),
    };
    for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
        env.apply_json(&twin_binding(&late, suffix, sched)).await?;
    }
    let failures_before = log_of(&go).matches(decode_error).count();
    match wait_scheduled(&rbs, "late-rs").await {
        Ok(rb) => problems.extend(check(&late.expect, "late-rs", &rb)),
        Err(e) => return Err(ours_explain(&mut ours, e)),
    }
    wait_for("a failed relist of the Go scheduler", RELIST, || async {
        Ok((log_of(&go).matches(decode_error).count() > failures_before).then_some(()))
    })
    .await?;
    let late_go = rbs.get("late-go").await?;
    assert!(
        scheduled_condition(&late_go).is_none(),
        "the Go scheduler saw a binding while its list could not be decoded: {}",
        late_go.data
    );
    // Without the bad object the reference recovers and schedules the twin like ours.
    rbs.delete("e-replicas-int32-overflow", &Default::default())
        .await?;
    let rb = wait_for("late-go scheduled after the delete", RELIST, || async {
        let rb = rbs.get("late-go").await?;
        Ok(scheduled_condition(&rb).map(|_| rb))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", go.log_tail(20)))?;
    problems.extend(check(&late.expect, "late-go", &rb));
    problems.extend(settled_differences(&rbs, "late", "late-rs", "late-go", SETTLE).await?);

    // (f) A negative maxGroups (validation bypassed). The reference slices with the negative
    // bound and panics (its process exits): deliberately not followed; ours treats it as 0,
    // which for Duplicated selects no cluster (docs/compatibility.md).
    let negative = tolerant(json!({
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": -1}],
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}));
    for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
        env.apply_json(&binding(
            &format!("f-negative-maxgroups-{suffix}"),
            2,
            negative.clone(),
            sched,
        ))
        .await?;
    }
    match wait_scheduled(&rbs, "f-negative-maxgroups-rs").await {
        Ok(rb) => problems.extend(check(
            &Expect::Failed(
                "SchedulerError",
                Msg::Exact("failed to assign replicas: no clusters available to schedule".into()),
            ),
            "f-negative-maxgroups-rs",
            &rb,
        )),
        Err(e) => return Err(ours_explain(&mut ours, e)),
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = go.try_wait()? {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Go scheduler still runs after a negative maxGroups:\n{}",
            go.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let go_log = log_of(&go);
    assert!(
        go_log.contains("panic: runtime error: slice bounds out of range"),
        "the Go scheduler exited ({status}) without the expected panic:\n{}",
        go.log_tail(40)
    );

    // Good bindings all scheduled, bad ones still not, ours alive and never panicked.
    for case in &cases {
        let rb = rbs.get(&format!("{}-rs", case.name)).await?;
        problems.extend(check(&case.expect, &format!("{}-rs (end)", case.name), &rb));
    }
    if let Some(status) = ours.try_wait()? {
        problems.push(format!("our scheduler exited: {status}"));
    }
    let our_log = log_of(&ours);
    if our_log.contains("panicked") {
        problems.push(format!("our scheduler panicked:\n{}", ours.log_tail(60)));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );

    drop(ours);
    drop(go);
    env.stop();
    Ok(())
}
