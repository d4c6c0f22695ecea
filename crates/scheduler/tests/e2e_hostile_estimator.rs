//! Broken estimator answers end to end, on a real control plane, ours beside the Go
//! karmada-scheduler v1.18.2 (each with its own `--scheduler-name`, scheduling its own twin of
//! every binding): member1's estimator answers every call with two gRPC messages, member3's
//! with an endless stream of them, and member2's (a real Go estimator) normally. Both kinds of
//! servers are `testenv::estimator::hostile`'s, which the client tests use too.
//!
//! grpc-go fails a unary call at its second message, so Go's accurate estimator fails for the
//! binding and its placement follows the general estimator alone. Ours must place every
//! binding exactly as Go places its twin, log the failure with the estimator named and grpc-go's
//! words, and end every broken call at once (not at the 3 s estimator timeout), having let the
//! endless stream send no more than a flow-control window.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use testenv::estimator::hostile::{Broken, BrokenEstimator, Served};
use testenv::{TestEnv, tools_or_skip, wait_for};

use common::*;

/// How long twins may take to agree once both are scheduled.
const SETTLE: Duration = Duration::from_secs(30);

/// grpc-go's error for a second message, as the fan-out reports it for `cluster`.
fn another_message(cluster: &str) -> String {
    format!(
        "gRPC request cluster({cluster}) estimator error when calling MaxAvailableReplicas: \
         rpc error: code = Internal desc = cardinality violation: expected <EOF> for non \
         server-streaming RPCs, but received another message"
    )
}

/// Points `member`'s estimator Service (ExternalName 127.0.0.1) at `port`.
async fn point_estimator(env: &TestEnv, member: &str, port: u16) -> anyhow::Result<()> {
    let services: Api<Service> = Api::namespaced(env.client().await?, "karmada-system");
    let patch = json!({"spec": {"ports": [
        {"name": "grpc", "protocol": "TCP", "port": 10352, "targetPort": port}]}});
    services
        .patch(
            &format!("karmada-scheduler-estimator-{member}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

/// Dynamic weights by available replicas over `clusters`: the estimators' answers decide
/// the division.
fn dynamic(clusters: [&str; 2]) -> Value {
    json!({"clusterAffinity": {"clusterNames": clusters},
           "replicaScheduling": {"replicaSchedulingType": "Divided",
               "replicaDivisionPreference": "Weighted",
               "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})
}

/// The calls a broken estimator served to ours and to Go's, told apart by user agent.
fn by_scheduler(served: &[Served]) -> (Vec<&Served>, Vec<&Served>) {
    served
        .iter()
        .partition(|s| s.call.user_agent.starts_with("karmada-scheduler-rs/"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_unary_answers_fail_the_estimator_as_in_go() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("broken_unary_answers_fail_the_estimator_as_in_go") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(3).start().await?;
    // The first message would let member1 take one replica at most, member3 two.
    let two = BrokenEstimator::serve(Broken::Messages(vec![1, 9])).await?;
    let endless = BrokenEstimator::serve(Broken::Endless(2)).await?;
    point_estimator(&env, "member1", two.port).await?;
    point_estimator(&env, "member3", endless.port).await?;

    let mut go = env.spawn_go_scheduler(&[
        "--enable-scheduler-estimator=true",
        "--scheduler-name=go-scheduler",
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let extra = [&["--scheduler-name=rs-scheduler"], testenv::AS_V1_18_2].concat();
    let (mut ours, health) = spawn_ours(&env, &extra)?;
    wait_for("our scheduler healthy", WAIT, || async {
        Ok(matches!(testenv::http_get(&health, "/healthz").await, Ok((200, _))).then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", ours.log_tail(40)))?;

    // (case, the clusters of its twins, the broken one, its first message).
    let cases = [
        ("two-messages", ["member1", "member2"], "member1", 1),
        ("endless", ["member3", "member2"], "member3", 2),
    ];
    for (case, clusters, _, _) in &cases {
        for (scheduler, suffix) in [("rs-scheduler", "rs"), ("go-scheduler", "go")] {
            env.apply_json(&binding(
                &format!("{case}-{suffix}"),
                10,
                dynamic(*clusters),
                scheduler,
            ))
            .await?;
        }
    }

    let rbs = rb_api(&env).await?;
    let mut problems = Vec::new();
    for (case, _, broken, first) in &cases {
        let (rs, go_name) = (format!("{case}-rs"), format!("{case}-go"));
        let ours_rb = wait_scheduled(&rbs, &rs)
            .await
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", ours.log_tail(40)))?;
        let go_rb = wait_scheduled(&rbs, &go_name)
            .await
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", go.log_tail(40)))?;
        println!(
            "{case} ({broken} broken): ours {} / Go {}",
            ours_rb.data["spec"]["clusters"], go_rb.data["spec"]["clusters"]
        );
        problems.extend(settled_differences(&rbs, case, &rs, &go_name, SETTLE).await?);
        for rb in [&ours_rb, &go_rb] {
            let cond = scheduled_condition(rb).unwrap_or_default();
            if cond["status"] != "True" {
                problems.push(format!("{case}: not scheduled: {cond}"));
            }
            // The broken estimator's first message was not taken as its answer (it would have
            // capped the cluster at that many replicas).
            let placed = rb.data["spec"]["clusters"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["name"] == *broken)
                .and_then(|c| c["replicas"].as_i64())
                .unwrap_or(0);
            if placed <= *first {
                problems.push(format!(
                    "{case}: {broken} got {placed} replicas: its first message ({first}) was used"
                ));
            }
        }

        // Both report the failure in grpc-go's words, naming the estimator.
        let words = another_message(broken);
        let logged = wait_for(&format!("ours logs {broken}'s error"), SETTLE, || async {
            Ok(log_of(&ours).contains(&words).then_some(()))
        })
        .await;
        if logged.is_err() {
            problems.push(format!(
                "{case}: our log lacks {words:?}:\n{}",
                ours.log_tail(30)
            ));
        }
        if !log_of(&go).contains(&format!("Max cluster available replicas error: {words}")) {
            problems.push(format!(
                "{case}: Go's log lacks {words:?}:\n{}",
                go.log_tail(30)
            ));
        }
    }

    // Every broken call ended at once, ours as Go's; the endless answer was cut off within a
    // flow-control window (ours: 2 MiB a stream).
    for (server, name) in [(&two, "two messages"), (&endless, "endless")] {
        let served = server.served();
        let (mine, theirs) = by_scheduler(&served);
        let longest = |calls: &[&Served]| calls.iter().map(|s| s.open).max();
        let most = |calls: &[&Served]| calls.iter().map(|s| s.sent).max();
        println!(
            "{name}: ours {} call(s), open at most {:?}, sent at most {:?} bytes; \
             Go {} call(s), open at most {:?}, sent at most {:?} bytes",
            mine.len(),
            longest(&mine),
            most(&mine),
            theirs.len(),
            longest(&theirs),
            most(&theirs)
        );
        if mine.is_empty() || theirs.is_empty() {
            problems.push(format!("{name}: calls of ours {mine:?}, of Go {theirs:?}"));
        }
        for s in &mine {
            if s.open > Duration::from_secs(1) || s.sent > 2 * 1024 * 1024 + 1024 {
                problems.push(format!(
                    "{name}: our call took too long or read too much: {s:?}"
                ));
            }
        }
    }

    if let Some(status) = ours.try_wait()? {
        problems.push(format!("our scheduler exited: {status}"));
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
