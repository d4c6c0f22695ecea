//! `simulate` and the daemon decide the same, on a real control plane with real Go estimators,
//! for every binding of the end-to-end tests (`testenv::fixtures::all`), "no action" decisions
//! included.
//!
//! The fixtures are created while no scheduler runs; the objects `simulate` reads are then
//! taken from the API server (the Clusters, the bindings, and the estimator Services and
//! EndpointSlices, so that `simulate --enable-scheduler-estimator` asks the same estimators as
//! the daemon) and `simulate` runs on them. Then the daemon starts, and:
//!
//! * where the fixture expects the daemon to act, `simulate` says it acts, and its result,
//!   placement and message are those of the `Scheduled` condition and `spec.clusters` the
//!   daemon writes;
//! * where it expects no action (up to date, being deleted, another scheduler name, suspended,
//!   no policy label), `simulate` says the daemon would not act, and the daemon does not write
//!   the binding: its resourceVersion is unchanged after a canary binding created later was
//!   scheduled;
//! * where only the observed generation lags, `simulate` says the daemon only records it, and
//!   the daemon writes that and nothing else.
//!
//! Then a second snapshot of the scheduled bindings: those `simulate` now says the daemon would
//! not act on are not written again (checked after a second canary).
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind, TypeMeta};
use serde_json::{Value, json};
use testenv::fixtures::{self, Expect, Fixture};
use testenv::{TestEnv, tools_or_skip, wait_for};

use common::*;

/// How long the daemon's writes may take to settle after the first `Scheduled` condition
/// (a result patch bumps the generation, and some bindings get one more cycle).
const SETTLE: Duration = Duration::from_secs(20);

fn api_resource(group: &str, version: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

/// Every object of `ar` (in `namespace`, or all), with its kind set for `simulate`.
async fn list(
    env: &TestEnv,
    ar: &ApiResource,
    namespace: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    let client = env.client().await?;
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client, ns, ar),
        None => Api::all_with(client, ar),
    };
    let mut out = Vec::new();
    for mut o in api.list(&ListParams::default()).await?.items {
        o.types = Some(TypeMeta {
            api_version: ar.api_version.clone(),
            kind: ar.kind.clone(),
        });
        out.push(serde_json::to_value(o)?);
    }
    Ok(out)
}

/// What `simulate` reads: the Clusters, the estimator Services and EndpointSlices and the
/// bindings, as the API server has them now, one JSON document each.
async fn snapshot(env: &TestEnv, dir: &Path, tag: &str) -> anyhow::Result<std::path::PathBuf> {
    let mut docs = Vec::new();
    docs.extend(
        list(
            env,
            &api_resource("cluster.karmada.io", "v1alpha1", "Cluster"),
            None,
        )
        .await?,
    );
    docs.extend(
        list(
            env,
            &api_resource("", "v1", "Service"),
            Some("karmada-system"),
        )
        .await?,
    );
    docs.extend(
        list(
            env,
            &api_resource("discovery.k8s.io", "v1", "EndpointSlice"),
            Some("karmada-system"),
        )
        .await?,
    );
    docs.extend(
        list(
            env,
            &api_resource("work.karmada.io", "v1alpha2", "ResourceBinding"),
            Some("default"),
        )
        .await?,
    );
    docs.extend(
        list(
            env,
            &api_resource("work.karmada.io", "v1alpha2", "ClusterResourceBinding"),
            None,
        )
        .await?,
    );
    let text: Vec<String> = docs.iter().map(Value::to_string).collect();
    let file = dir.join(format!("parity-{tag}.yaml"));
    std::fs::write(&file, text.join("\n---\n"))?;
    Ok(file)
}

/// `simulate` over `file`, with the daemon's estimator flag: its elements by (kind, name).
fn simulate(file: &Path) -> anyhow::Result<BTreeMap<(String, String), Value>> {
    let out = testenv::simulate::run_json(
        Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
        file,
        &["--enable-scheduler-estimator=true".to_string()],
    )
    .map_err(anyhow::Error::msg)?;
    Ok(out
        .into_iter()
        .map(|e| {
            let key = (
                e["kind"].as_str().unwrap_or_default().to_string(),
                e["name"].as_str().unwrap_or_default().to_string(),
            );
            (key, e)
        })
        .collect())
}

/// (result, sorted clusters, message) in `simulate`'s terms.
type Outcome = (String, Vec<(String, i64)>, String);

fn sorted_clusters(v: &Value) -> Vec<(String, i64)> {
    let mut out = testenv::fixtures::placement_in(v);
    out.sort();
    out
}

fn simulated(e: &Value) -> Outcome {
    (
        e["result"].as_str().unwrap_or_default().to_string(),
        sorted_clusters(&e["clusters"]),
        e["message"].as_str().unwrap_or_default().to_string(),
    )
}

/// What the daemon wrote, classed as `simulate` classes a result (docs/simulate.md).
fn written(o: &DynamicObject) -> Option<Outcome> {
    let c = scheduled_condition(o)?;
    let reason = c["reason"].as_str().unwrap_or_default();
    let result = match reason {
        "Success" => "Scheduled",
        "NoClusterFit" | "Unschedulable" => "Unschedulable",
        _ => "Error",
    };
    let clusters = if result == "Scheduled" {
        sorted_clusters(&clusters_of(o))
    } else {
        Vec::new()
    };
    Some((
        result.to_string(),
        clusters,
        c["message"].as_str().unwrap_or_default().to_string(),
    ))
}

struct Apis {
    rb: Api<DynamicObject>,
    crb: Api<DynamicObject>,
}

impl Apis {
    fn of(&self, kind: &str) -> &Api<DynamicObject> {
        if kind == "ClusterResourceBinding" {
            &self.crb
        } else {
            &self.rb
        }
    }
}

/// Create `canary` and wait until the daemon has scheduled it, then a little longer: the
/// daemon has processed what it had queued before.
async fn canary(env: &TestEnv, apis: &Apis, name: &str) -> anyhow::Result<()> {
    let placement = json!({"clusterAffinity": {"clusterNames": ["member1"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}});
    env.apply_json(&fixtures::binding(name, 1, placement, "default-scheduler"))
        .await?;
    let rb = wait_scheduled(&apis.rb, name).await?;
    anyhow::ensure!(
        scheduled_condition(&rb).is_some_and(|c| c["status"] == "True"),
        "canary {name} not scheduled: {:?}",
        scheduled_condition(&rb)
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(())
}

/// Wait until the daemon wrote a `Scheduled` condition, then until it equals `want` or
/// [`SETTLE`] passes; the last outcome read.
async fn settled(
    api: &Api<DynamicObject>,
    name: &str,
    want: &Outcome,
) -> anyhow::Result<Option<Outcome>> {
    wait_for(&format!("Scheduled condition of {name}"), WAIT, || async {
        Ok(written(&api.get(name).await?))
    })
    .await?;
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let got = written(&api.get(name).await?);
        if got.as_ref() == Some(want) || tokio::time::Instant::now() >= deadline {
            return Ok(got);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_decides_what_the_daemon_does() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("simulate_decides_what_the_daemon_does") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).start().await?;
    for cluster in fixtures::extra_clusters() {
        env.apply_json(&cluster).await?;
    }
    let apis = Apis {
        rb: rb_api(&env).await?,
        crb: crb_api(&env).await?,
    };
    let all: Vec<Fixture> = fixtures::all();
    for f in &all {
        env.apply_json(&f.object).await?;
        if f.delete {
            apis.of(f.kind())
                .delete(&f.name, &DeleteParams::default())
                .await?;
        }
    }
    let dir = env.state_dir().to_path_buf();
    let sim = simulate(&snapshot(&env, &dir, "before").await?)?;
    let mut before = BTreeMap::new();
    for f in &all {
        before.insert(f.name.clone(), apis.of(f.kind()).get(&f.name).await?);
    }

    let ours = OurScheduler::start(&env, &["--enable-scheduler-estimator=true"]).await?;
    let mut diffs: Vec<String> = Vec::new();
    for f in all.iter().filter(|f| f.expect == Expect::Acts) {
        let Some(s) = sim.get(&(f.kind().to_string(), f.name.clone())) else {
            diffs.push(format!("{}: not in simulate's output", f.name));
            continue;
        };
        if s["daemonActs"] != true {
            diffs.push(format!(
                "{}: simulate says the daemon would not act ({}), the fixture expects it to",
                f.name, s["decision"]
            ));
        }
        let want = simulated(s);
        let got = settled(apis.of(f.kind()), &f.name, &want)
            .await
            .map_err(|e| ours.explain(e))?;
        if got.as_ref() != Some(&want) {
            diffs.push(format!(
                "{}: simulate and the daemon differ\n  simulate: {want:?}\n  daemon:   {got:?}",
                f.name
            ));
        }
    }
    canary(&env, &apis, "canary-1")
        .await
        .map_err(|e| ours.explain(e))?;
    for f in all.iter().filter(|f| f.expect != Expect::Acts) {
        let Some(s) = sim.get(&(f.kind().to_string(), f.name.clone())) else {
            diffs.push(format!("{}: not in simulate's output", f.name));
            continue;
        };
        let decision = s["decision"].as_str().unwrap_or_default();
        let syncs = decision.contains("only record generation");
        if s["daemonActs"] != false || syncs != (f.expect == Expect::SyncGeneration) {
            diffs.push(format!(
                "{}: the fixture expects {:?}, simulate says: daemonActs {}, {decision:?}",
                f.name, f.expect, s["daemonActs"]
            ));
        }
        let old = &before[&f.name];
        let now = apis.of(f.kind()).get(&f.name).await?;
        let rv = |o: &DynamicObject| o.metadata.resource_version.clone();
        let observed = |o: &DynamicObject| {
            o.data
                .pointer("/status/schedulerObservedGeneration")
                .cloned()
        };
        let ok = match f.expect {
            Expect::SyncGeneration => {
                now.data["spec"] == old.data["spec"]
                    && now.metadata.annotations == old.metadata.annotations
                    && scheduled_condition(&now) == scheduled_condition(old)
                    && observed(&now) == now.metadata.generation.map(|g| json!(g))
            }
            _ => rv(&now) == rv(old),
        };
        if !ok {
            diffs.push(format!(
                "{}: simulate says {decision:?}; the daemon wrote:\n  before: rv {:?}, spec {}, status {}\n  after:  rv {:?}, spec {}, status {}",
                f.name,
                rv(old),
                old.data["spec"],
                old.data["status"],
                rv(&now),
                now.data["spec"],
                now.data["status"],
            ));
        }
    }

    // Second round: the daemon's own results, snapshotted again. Where simulate now says the
    // daemon would not act (up to date), the daemon leaves them alone. (Where it says the
    // daemon would act, Duplicated placements and non-workloads, nothing queues them without
    // a change, so there is nothing to compare.)
    let sim2 = simulate(&snapshot(&env, &dir, "after").await?)?;
    let mut idle = Vec::new();
    for f in all.iter().filter(|f| f.expect == Expect::Acts) {
        let s = &sim2[&(f.kind().to_string(), f.name.clone())];
        if s["daemonActs"] == false {
            let o = apis.of(f.kind()).get(&f.name).await?;
            idle.push((f, o.metadata.resource_version.clone(), s.clone()));
        }
    }
    assert!(
        idle.iter().any(|(f, ..)| f.name == "static-rs"),
        "simulate says the daemon acts again on a scheduled Divided binding: {:?}",
        sim2.get(&("ResourceBinding".to_string(), "static-rs".to_string()))
    );
    canary(&env, &apis, "canary-2")
        .await
        .map_err(|e| ours.explain(e))?;
    for (f, rv, s) in &idle {
        let now = apis.of(f.kind()).get(&f.name).await?;
        if &now.metadata.resource_version != rv {
            diffs.push(format!(
                "{} (scheduled): simulate says {}; the daemon wrote it again: rv {rv:?} -> {:?}, status {}",
                f.name, s["decision"], now.metadata.resource_version, now.data["status"]
            ));
        }
    }

    // Let the held binding go.
    let deleting = apis.rb.get("na-deleting").await?;
    if deleting.metadata.finalizers.is_some() {
        apis.rb
            .patch(
                "na-deleting",
                &Default::default(),
                &kube::api::Patch::Merge(&json!({"metadata": {"finalizers": null}})),
            )
            .await?;
    }
    ours.shutdown().await?;
    assert!(
        diffs.is_empty(),
        "simulate and the daemon disagree:\n{}",
        diffs.join("\n")
    );
    env.stop();
    Ok(())
}
