//! `--descheduler-only`: one descheduling pass over N bindings × M clusters, the Go
//! karmada-descheduler v1.18.2 and ours in turn on the same control plane, with a stub
//! estimator ([`crate::stub_estimator`]) answering `GetUnschedulableReplicas` from a formula
//! behind M `ExternalName` Services.
//!
//! Every binding is a Deployment divided `Aggregated` over all M clusters, 3 replicas each,
//! 1 ready in each (so every cluster is asked about). A pass is over when every binding the
//! formula gives replicas back for has been written; its time runs from the process start
//! (caches and connections included). Reported per side: that time, the estimator calls,
//! peak RSS, CPU seconds, and whether both wrote the same `spec.clusters`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use testenv::{TestEnv, apply_value, free_port};
use tokio::time::Instant;

use crate::jobs::in_flight;
use crate::procs::{cpu_seconds, memory_kib};
use crate::run::log;
use crate::stub_estimator::{StubEstimator, unschedulable_answer};

/// What the flags ask for.
#[derive(Clone, Debug)]
pub struct DeschedFlags {
    pub bindings: usize,
    pub clusters: usize,
    pub latency: Duration,
    pub create_concurrency: usize,
    pub rust_bin: PathBuf,
    pub go_bin: Option<PathBuf>,
    pub timeout: Duration,
}

/// One descheduler's pass.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeschedSide {
    pub name: String,
    /// Seconds from the process start to the last expected write (None: not all written).
    pub pass_s: Option<f64>,
    pub written: usize,
    pub estimator_calls: u64,
    pub peak_rss_kib: u64,
    pub cpu_s: f64,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeschedBench {
    pub date: String,
    pub machine: String,
    pub git_commit: String,
    pub bindings: usize,
    pub clusters: usize,
    pub latency_ms: f64,
    /// Bindings the formula gives replicas back for.
    pub expected_writes: usize,
    pub rust: DeschedSide,
    pub go: DeschedSide,
    /// Bindings with the same `spec.clusters` after both passes, of all.
    pub agree: usize,
}

const REPLICAS: i32 = 3;
const READY: i32 = 1;

fn binding_name(i: usize) -> String {
    format!("web-{i:05}")
}

fn cluster_name(i: usize) -> String {
    format!("member{}", i + 1)
}

/// The `spec.clusters` replicas the reference's rules give for binding `i`.
fn expected(i: usize, clusters: usize) -> Vec<i32> {
    (0..clusters)
        .map(|c| {
            let u = unschedulable_answer(&cluster_name(c), &binding_name(i));
            if u > 0 && REPLICAS >= u {
                (REPLICAS - u).max(READY)
            } else {
                REPLICAS
            }
        })
        .collect()
}

async fn create_all(client: &Client, values: Vec<Value>, concurrency: usize) -> anyhow::Result<()> {
    let jobs = values
        .into_iter()
        .map(|v| async move { apply_value(client, &v).await.map(|_| ()) });
    in_flight(jobs, concurrency).await
}

fn bindings_of(ns: &str, n: usize, clusters: usize) -> Vec<Value> {
    let targets: Vec<Value> = (0..clusters)
        .map(|c| json!({"name": cluster_name(c), "replicas": REPLICAS}))
        .collect();
    let status: Vec<Value> = (0..clusters)
        .map(|c| {
            json!({"clusterName": cluster_name(c), "applied": true,
                        "status": {"replicas": REPLICAS, "readyReplicas": READY}})
        })
        .collect();
    (0..n)
        .map(|i| {
            json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": binding_name(i), "namespace": ns,
                             "annotations": {"policy.karmada.io/applied-placement":
                                 r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}"#}},
                "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "namespace": ns, "name": binding_name(i)},
                         "replicas": REPLICAS * clusters as i32, "clusters": targets},
                "status": {"aggregatedStatus": status}
            })
        })
        .collect()
}

fn rb_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &crate::observe::rb_resource())
}

/// `spec.clusters` replicas of every binding of `ns`.
async fn placements(client: &Client, ns: &str) -> anyhow::Result<BTreeMap<String, Vec<i32>>> {
    let list = rb_api(client, ns).list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .map(|o| {
            let replicas = o.data["spec"]["clusters"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| c["replicas"].as_i64().unwrap_or(0) as i32)
                        .collect()
                })
                .unwrap_or_default();
            (o.metadata.name.unwrap_or_default(), replicas)
        })
        .collect())
}

/// Runs one descheduler over the bindings of `ns` until the expected writes are in.
async fn side(
    env: &TestEnv,
    flags: &DeschedFlags,
    stub: &StubEstimator,
    name: &str,
    program: &std::path::Path,
    ns: &str,
    t0: Instant,
) -> anyhow::Result<(DeschedSide, BTreeMap<String, Vec<i32>>)> {
    let client = env.client().await?;
    apply_value(
        &client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await?;
    create_all(
        &client,
        bindings_of(ns, flags.bindings, flags.clusters),
        flags.create_concurrency,
    )
    .await?;
    let want: BTreeMap<String, Vec<i32>> = (0..flags.bindings)
        .map(|i| (binding_name(i), expected(i, flags.clusters)))
        .collect();
    let expected_writes = want
        .values()
        .filter(|r| r.iter().any(|&x| x != REPLICAS))
        .count();
    log(
        t0,
        format!(
            "{name}: {} bindings in {ns}, {expected_writes} to be written",
            flags.bindings
        ),
    );
    let calls_before = stub.unschedulable_calls();
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--descheduling-interval=1h".to_string(),
        "--unschedulable-threshold=1m".to_string(),
        "--kube-api-qps=5000".to_string(),
        "--kube-api-burst=10000".to_string(),
        format!("--metrics-bind-address=127.0.0.1:{}", free_port()),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ];
    let start = Instant::now();
    let mut process = env.spawn_process(name, program, &args)?;
    let mut pass_s = None;
    let mut written = 0;
    while start.elapsed() < flags.timeout {
        if let Ok(Some(status)) = process.try_wait() {
            anyhow::bail!("{name} exited ({status}):\n{}", process.log_tail(30));
        }
        let now = placements(&client, ns).await?;
        written = now
            .values()
            .filter(|r| r.iter().any(|&x| x != REPLICAS))
            .count();
        if written >= expected_writes {
            pass_s = Some(start.elapsed().as_secs_f64());
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, hwm) = memory_kib(process.pid()).unwrap_or((0, 0));
    let cpu = cpu_seconds(process.pid()).unwrap_or(0.0);
    // A moment for writes beyond the expected ones, then the final state.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls = stub.unschedulable_calls() - calls_before;
    let result = placements(&client, ns).await?;
    process.kill();
    log(
        t0,
        format!(
            "{name}: {written}/{expected_writes} written in {}, {calls} estimator calls, peak RSS {:.1} MiB",
            pass_s.map_or("(timeout)".to_string(), |s| format!("{s:.2}s")),
            hwm as f64 / 1024.0
        ),
    );
    Ok((
        DeschedSide {
            name: name.to_string(),
            pass_s,
            written,
            estimator_calls: calls,
            peak_rss_kib: hwm,
            cpu_s: cpu,
        },
        result,
    ))
}

/// Runs the descheduler bench.
pub async fn run(flags: &DeschedFlags) -> anyhow::Result<DeschedBench> {
    let t0 = Instant::now();
    let tools = testenv::Tools::ensure().map_err(|e| anyhow::anyhow!("{e}"))?;
    let go_bin = flags
        .go_bin
        .clone()
        .unwrap_or_else(|| tools.bin("karmada-descheduler"));
    anyhow::ensure!(
        flags.rust_bin.is_file(),
        "{} not found: build it with `cargo build --release -p karmada-descheduler`",
        flags.rust_bin.display()
    );
    let env = TestEnv::builder().tools(tools).members(0).start().await?;
    let client = env.client().await?;
    let stub = StubEstimator::start(flags.latency).await?;
    let port = stub.addr.port();
    let mut objects = Vec::new();
    for c in 0..flags.clusters {
        let name = cluster_name(c);
        objects.push(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"}
        }));
        objects.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("karmada-scheduler-estimator-{name}"),
                         "namespace": "karmada-system"},
            "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                     "ports": [{"name": "grpc", "protocol": "TCP", "port": 10352, "targetPort": port}]}
        }));
    }
    create_all(&client, objects, flags.create_concurrency)
        .await
        .context("creating the clusters and their estimator Services")?;
    log(
        t0,
        format!(
            "{} clusters, estimator stub on {}",
            flags.clusters, stub.addr
        ),
    );

    // The reference alone with its bindings, which are then deleted so that ours sees only
    // its own.
    let (go, go_result) = side(
        &env,
        flags,
        &stub,
        "go-descheduler",
        &go_bin,
        "desched-go",
        t0,
    )
    .await?;
    let api = rb_api(&client, "desched-go");
    api.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    while !api.list(&ListParams::default()).await?.items.is_empty() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (rust, rust_result) = side(
        &env,
        flags,
        &stub,
        "rs-descheduler",
        &flags.rust_bin,
        "desched-rs",
        t0,
    )
    .await?;
    // The same answers in both namespaces: both must write the same, which is what the
    // reference's rules give.
    let agree = (0..flags.bindings)
        .filter(|&i| {
            let n = binding_name(i);
            let want = expected(i, flags.clusters);
            go_result.get(&n) == Some(&want) && rust_result.get(&n) == Some(&want)
        })
        .count();
    let expected_writes = (0..flags.bindings)
        .filter(|&i| expected(i, flags.clusters).iter().any(|&x| x != REPLICAS))
        .count();
    env.stop();
    Ok(DeschedBench {
        bindings: flags.bindings,
        clusters: flags.clusters,
        latency_ms: flags.latency.as_secs_f64() * 1000.0,
        expected_writes,
        rust,
        go,
        agree,
        ..Default::default()
    })
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "–".into()
    }
}

/// The Markdown report.
pub fn markdown(b: &DeschedBench) -> String {
    let secs = |s: &DeschedSide| {
        s.pass_s
            .map_or("did not finish".to_string(), |v| format!("{v:.2} s"))
    };
    let mib = |s: &DeschedSide| s.peak_rss_kib as f64 / 1024.0;
    let per = |s: &DeschedSide| s.estimator_calls as f64 / b.bindings.max(1) as f64;
    let mut out = format!(
        "# Descheduling pass: {} bindings × {} clusters\n\n\
         {} · {} · commit {}\n\n\
         One pass of the Go karmada-descheduler v1.18.2 and of ours, in turn, on one local \
         kube-apiserver. Every binding is a Deployment divided `Aggregated` over all {} clusters \
         ({} replicas each, {} ready), so every cluster is asked `GetUnschedulableReplicas`; a stub \
         estimator behind {} `ExternalName` Services answers 0–2 from a hash of cluster and \
         workload after {:.0} ms. {} bindings get replicas back. The time runs from the process \
         start to the last of those writes (cache sync and estimator connections included).\n\n",
        b.bindings,
        b.clusters,
        b.date,
        b.machine,
        b.git_commit,
        b.clusters,
        REPLICAS,
        READY,
        b.clusters,
        b.latency_ms,
        b.expected_writes,
    );
    out.push_str("| | ours | Go | Go / ours |\n| --- | ---: | ---: | ---: |\n");
    out.push_str(&format!(
        "| pass time | {} | {} | {} |\n",
        secs(&b.rust),
        secs(&b.go),
        match (b.go.pass_s, b.rust.pass_s) {
            (Some(g), Some(r)) => ratio(g, r),
            _ => "–".into(),
        }
    ));
    out.push_str(&format!(
        "| bindings written | {} | {} | |\n",
        b.rust.written, b.go.written
    ));
    out.push_str(&format!(
        "| estimator calls per binding | {:.1} | {:.1} | {} |\n",
        per(&b.rust),
        per(&b.go),
        ratio(per(&b.go), per(&b.rust))
    ));
    out.push_str(&format!(
        "| peak RSS | {:.1} MiB | {:.1} MiB | {} |\n",
        mib(&b.rust),
        mib(&b.go),
        ratio(mib(&b.go), mib(&b.rust))
    ));
    out.push_str(&format!(
        "| CPU seconds | {:.2} | {:.2} | {} |\n",
        b.rust.cpu_s,
        b.go.cpu_s,
        ratio(b.go.cpu_s, b.rust.cpu_s)
    ));
    out.push_str(&format!(
        "\nBoth wrote the same `spec.clusters`, the one the reference's rules give, for {} of {} bindings.\n",
        b.agree, b.bindings
    ));
    out
}
