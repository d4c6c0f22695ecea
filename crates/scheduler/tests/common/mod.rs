//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::time::Duration;

use component_base::cancel::CancellationToken;
use karmada_scheduler::config::options::{Invocation, parse};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use testenv::{TestEnv, wait_for};

pub mod image;

pub const WAIT: Duration = Duration::from_secs(90);

/// Everything a process has logged so far.
pub fn log_of(p: &testenv::GoProcess) -> String {
    std::fs::read_to_string(p.log_path()).unwrap_or_default()
}

/// Our `karmada-scheduler` as its own process, without leader election, with estimators,
/// metrics and probes on free loopback ports, and `extra` flags; its probe address.
pub fn spawn_ours(env: &TestEnv, extra: &[&str]) -> anyhow::Result<(testenv::GoProcess, String)> {
    let health = format!("127.0.0.1:{}", testenv::free_port());
    let mut args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--enable-scheduler-estimator=true".to_string(),
        format!("--metrics-bind-address=127.0.0.1:{}", testenv::free_port()),
        format!("--health-probe-bind-address={health}"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    Ok((env.spawn_process("rs-scheduler", bin, &args)?, health))
}

#[allow(unused_imports)]
pub use testenv::fixtures::{binding, cluster_binding, extra_cluster};

pub async fn rb_api(env: &TestEnv) -> anyhow::Result<Api<DynamicObject>> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "work.karmada.io",
        "v1alpha2",
        "ResourceBinding",
    ));
    Ok(Api::namespaced_with(env.client().await?, "default", &ar))
}

pub async fn crb_api(env: &TestEnv) -> anyhow::Result<Api<DynamicObject>> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "work.karmada.io",
        "v1alpha2",
        "ClusterResourceBinding",
    ));
    Ok(Api::all_with(env.client().await?, &ar))
}

/// `(type, reason, message)` of the Events about one object, sorted.
pub async fn events_about(
    env: &TestEnv,
    namespace: &str,
    kind: &str,
    name: &str,
) -> anyhow::Result<Vec<(String, String, String)>> {
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(env.client().await?, namespace);
    let mut out: Vec<(String, String, String)> = api
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some(kind)
                && e.involved_object.name.as_deref() == Some(name)
        })
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

pub async fn cluster_api(env: &TestEnv) -> anyhow::Result<Api<DynamicObject>> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cluster.karmada.io",
        "v1alpha1",
        "Cluster",
    ));
    Ok(Api::all_with(env.client().await?, &ar))
}

/// This scheduler, in process, until dropped.
pub struct OurScheduler {
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl OurScheduler {
    pub async fn start(env: &TestEnv, extra: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_kubeconfig(env.kubeconfig(), extra).await
    }

    /// [`OurScheduler::start`] with another identity (e.g. `testenv::rbac`'s token).
    pub async fn start_with_kubeconfig(
        kubeconfig: &std::path::Path,
        extra: &[&str],
    ) -> anyhow::Result<Self> {
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_max_level(tracing::Level::INFO)
            .try_init();
        let mut args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            "--leader-elect=false".to_string(),
            "--metrics-bind-address=0".to_string(),
            "--health-probe-bind-address=0".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let Ok(Invocation::Run(opts)) = parse(&args) else {
            anyhow::bail!("bad test flags {args:?}")
        };
        opts.validate()?;
        let stop = CancellationToken::new();
        let s2 = stop.clone();
        let task =
            tokio::spawn(async move { karmada_scheduler::daemon::run_until(*opts, s2).await });
        Ok(Self {
            stop,
            task: Some(task),
        })
    }

    /// Add whether the scheduler task ended (and why) to a failure.
    pub fn explain(&self, e: anyhow::Error) -> anyhow::Error {
        let finished = self.task.as_ref().is_some_and(|t| t.is_finished());
        anyhow::anyhow!("{e:#} (our scheduler task finished: {finished})")
    }

    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.stop.cancel();
        match self.task.take() {
            Some(t) => t.await?,
            None => Ok(()),
        }
    }
}

impl Drop for OurScheduler {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub fn scheduled_condition(rb: &DynamicObject) -> Option<Value> {
    rb.data
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Scheduled")
        .cloned()
}

pub async fn wait_condition(rbs: &Api<DynamicObject>, name: &str) -> anyhow::Result<Value> {
    wait_for(&format!("Scheduled condition of {name}"), WAIT, || async {
        Ok(scheduled_condition(&rbs.get(name).await?))
    })
    .await
}

/// Wait until the binding has a `Scheduled` condition; return it.
pub async fn wait_scheduled(rbs: &Api<DynamicObject>, name: &str) -> anyhow::Result<DynamicObject> {
    wait_for(&format!("Scheduled condition of {name}"), WAIT, || async {
        let rb = rbs.get(name).await?;
        Ok(scheduled_condition(&rb).map(|_| rb))
    })
    .await
}

/// Wait until `status.schedulerObservedGeneration == metadata.generation` (or a failed
/// condition newer than the change).
pub async fn wait_generation_observed(
    rbs: &Api<DynamicObject>,
    name: &str,
) -> anyhow::Result<DynamicObject> {
    wait_for(&format!("observed generation of {name}"), WAIT, || async {
        let rb = rbs.get(name).await?;
        let g = rb.metadata.generation.unwrap_or_default();
        let observed = rb
            .data
            .pointer("/status/schedulerObservedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        Ok((g == observed).then_some(rb))
    })
    .await
}

pub async fn patch_spec(rbs: &Api<DynamicObject>, name: &str, spec: Value) -> anyhow::Result<()> {
    rbs.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": spec})),
    )
    .await?;
    Ok(())
}

pub fn clusters_of(rb: &DynamicObject) -> Value {
    rb.data
        .pointer("/spec/clusters")
        .cloned()
        .unwrap_or(Value::Null)
}

/// A message with the per-cluster diagnosis of a fit error cut off. For a cluster that fails
/// several filters, the Go scheduler reports the reasons of whichever filter plugin its map
/// iteration reaches first, which varies from run to run; only the part before
/// the diagnosis is deterministic.
pub fn fit_insensitive(message: &str) -> String {
    match message.find("clusters are available: ") {
        Some(i) => format!("{}clusters are available: <diagnosis>", &message[..i]),
        None => message.to_string(),
    }
}

/// Differences between the scheduler-written parts of two twins (empty when identical).
pub fn differences(case: &str, ours: &DynamicObject, go: &DynamicObject) -> Vec<String> {
    let ann = |o: &DynamicObject| {
        o.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("policy.karmada.io/applied-placement"))
            .cloned()
    };
    let cond = |o: &DynamicObject| {
        scheduled_condition(o).map(|c| {
            let message = fit_insensitive(c["message"].as_str().unwrap_or_default());
            (c["status"].clone(), c["reason"].clone(), message)
        })
    };
    let mut out = Vec::new();
    let mut check = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{case}: {what}\n  ours: {a}\n  go:   {b}"));
        }
    };
    check(
        "spec.clusters",
        clusters_of(ours).to_string(),
        clusters_of(go).to_string(),
    );
    check(
        "applied-placement",
        format!("{:?}", ann(ours)),
        format!("{:?}", ann(go)),
    );
    check(
        "Scheduled condition",
        format!("{:?}", cond(ours)),
        format!("{:?}", cond(go)),
    );
    for field in [
        "/status/schedulerObservedGeneration",
        "/status/schedulerObservingAffinityName",
    ] {
        check(
            field,
            format!("{:?}", ours.data.pointer(field)),
            format!("{:?}", go.data.pointer(field)),
        );
    }
    out
}

/// Compare twins until they agree or `timeout` passes (both sides settle at their own pace:
/// a result patch bumps the generation and triggers one more cycle on each side).
pub async fn settled_differences(
    api: &Api<DynamicObject>,
    case: &str,
    ours: &str,
    go: &str,
    timeout: Duration,
) -> anyhow::Result<Vec<String>> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let d = differences(case, &api.get(ours).await?, &api.get(go).await?);
        if d.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(d);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
