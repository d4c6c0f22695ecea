//! Failures on a real control plane, with the scheduler running throughout: the Karmada API
//! server is killed and restarted, a member's estimator is killed, then started on a new port
//! that only its ExternalName Service names. No binding is lost, nothing panics, and the
//! scheduler recovers without a restart (including reconnecting to the moved estimator).
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use serde_json::{Value, json};
use testenv::faults::{ApiServer, StoppedEstimator};
use testenv::{TestEnv, free_port, tools_or_skip, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;

fn dynamic(replicas: i32) -> (i32, Value) {
    (
        replicas,
        json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                     "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
    )
}

/// Replace the value of `--flag value` or `--flag=value`.
async fn scrape(addr: &str) -> String {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let _ = s
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await;
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf).await;
    buf
}

fn successes(metrics: &str, cluster: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("karmada_scheduler_estimator_client_requests_total"))
        .filter(|l| {
            l.contains(&format!("cluster=\"{cluster}\"")) && l.contains("result=\"success\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn wait_placed(rbs: &Api<DynamicObject>, name: &str, replicas: i64) -> anyhow::Result<()> {
    wait_for(
        &format!("{name} placed with {replicas} replicas"),
        WAIT,
        || async {
            let rb = rbs.get(name).await?;
            let sum: i64 = rb
                .data
                .pointer("/spec/clusters")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|c| c["replicas"].as_i64().unwrap_or(0)).sum())
                .unwrap_or(0);
            let observed = rb
                .data
                .pointer("/status/schedulerObservedGeneration")
                .and_then(Value::as_i64);
            Ok((sum == replicas && observed == rb.metadata.generation).then_some(()))
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_apiserver_and_estimator_failures() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("survives_apiserver_and_estimator_failures") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let metrics = format!("127.0.0.1:{}", free_port());
    let ours = OurScheduler::start(
        &env,
        &[
            "--enable-scheduler-estimator=true",
            &format!("--metrics-bind-address={metrics}"),
        ],
    )
    .await?;
    let rbs = rb_api(&env).await?;
    let (r, p) = dynamic(4);
    env.apply_json(&binding("before", r, p, "default-scheduler"))
        .await?;
    wait_placed(&rbs, "before", 4)
        .await
        .map_err(|e| ours.explain(e))?;

    // 1. Kill the Karmada API server and bring it back on the same port and etcd data.
    let mut apiserver = ApiServer::new(&env, "resilience")?;
    apiserver.kill_and_restart(Duration::from_secs(3)).await?;
    wait_for("API server back", WAIT, || async {
        Ok(rb_api(&env)
            .await?
            .list(&Default::default())
            .await
            .ok()
            .map(|_| ()))
    })
    .await?;
    let rbs = rb_api(&env).await?;
    let (r, p) = dynamic(3);
    env.apply_json(&binding("after-restart", r, p, "default-scheduler"))
        .await?;
    patch_spec(&rbs, "before", json!({"replicas": 6})).await?;
    wait_placed(&rbs, "after-restart", 3)
        .await
        .map_err(|e| ours.explain(e))?;
    wait_placed(&rbs, "before", 6)
        .await
        .map_err(|e| ours.explain(e))?;

    // 2. Kill member1's estimator: bindings still schedule (general estimate).
    let stopped = StoppedEstimator::kill(&env, "member1")?;
    let (r, p) = dynamic(2);
    env.apply_json(&binding("no-estimator", r, p, "default-scheduler"))
        .await?;
    wait_placed(&rbs, "no-estimator", 2)
        .await
        .map_err(|e| ours.explain(e))?;

    // 3. Start it on a new port and point only the Service at it: the scheduler follows.
    let (_estimator, _port) = stopped.start_moved(&env).await?;
    let before = successes(&scrape(&metrics).await, "member1");
    let mut n = 0;
    wait_for("answers from the moved estimator", WAIT, || {
        n += 1;
        let (r, p) = dynamic(2);
        let name = format!("moved-{n}");
        let (env, rbs, metrics) = (&env, &rbs, &metrics);
        async move {
            env.apply_json(&binding(&name, r, p, "default-scheduler"))
                .await?;
            wait_placed(rbs, &name, 2).await?;
            Ok((successes(&scrape(metrics).await, "member1") > before).then_some(()))
        }
    })
    .await
    .map_err(|e| ours.explain(e))?;

    ours.shutdown().await?;
    drop(apiserver);
    env.stop();
    Ok(())
}
