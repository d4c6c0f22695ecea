//! `karmada-scheduler explain` against the local control plane with real Go estimators: for
//! bindings of every replica strategy, explain (which runs the daemon's cycle against a copy
//! in memory) says the daemon will act, and the clusters it reports are the ones the daemon
//! then writes. Once they are scheduled, explain says the daemon would not act, and its
//! attempt still lands where the daemon's did; the daemon's own `/debug/explain` endpoint
//! (`--enable-explain-endpoint`), answering from its live cache, says the same. With the
//! `WorkloadAffinity` gate, explain reads the other bindings of a workload group as the
//! daemon's group index does, and says where a binding of the group lands as the daemon then
//! writes it.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use testenv::{TestEnv, fixtures, tools_or_skip};

use common::*;

fn explain(env: &TestEnv, name: &str) -> anyhow::Result<Value> {
    explain_with(env, name, &["--enable-scheduler-estimator=true"])
}

/// `explain NAME -o json` with the daemon flags `flags`.
fn explain_with(env: &TestEnv, name: &str, flags: &[&str]) -> anyhow::Result<Value> {
    let out = Command::new(Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")))
        .args(["explain", name, "-n", "default", "-o", "json"])
        .arg(format!("--kubeconfig={}", env.kubeconfig().display()))
        .args(flags)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "explain {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// `spec.clusters` as sorted (name, replicas).
fn placed(v: &Value) -> Vec<(String, i64)> {
    let mut out = testenv::fixtures::placement_in(v);
    out.sort();
    out
}

/// GET `path` on `addr` with `token` as the bearer token, if any: the status and body.
async fn http_get_as(addr: &str, path: &str, token: Option<&str>) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).await?;
    let code = buf.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = buf.split("\r\n\r\n").nth(1).unwrap_or_default();
    Ok((code, body.to_string()))
}

/// GET `path` on `addr` as `token`; the body as JSON when the answer is 200.
async fn http_get_json(addr: &str, path: &str, token: &str) -> anyhow::Result<Value> {
    let (code, body) = http_get_as(addr, path, Some(token)).await?;
    anyhow::ensure!(code == 200, "GET {path}: {code} {body}");
    Ok(serde_json::from_str(&body)?)
}

/// A token of a new ServiceAccount `name` in `default`, which may `get` the ResourceBindings
/// of `default` when `reader`, and nothing otherwise.
async fn token_of(env: &TestEnv, name: &str, reader: bool) -> anyhow::Result<String> {
    let sa = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": "default"}});
    env.apply_json(&sa).await?;
    if reader {
        env.apply_json(&serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": "default"},
            "rules": [{"apiGroups": ["work.karmada.io"], "resources": ["resourcebindings"],
                "verbs": ["get"]}]}))
            .await?;
        env.apply_json(&serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]}))
            .await?;
    }
    let out = env
        .kubectl()
        .args(["create", "token", name, "-n", "default"])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl create token {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_says_what_the_daemon_then_writes() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("explain_says_what_the_daemon_then_writes") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).start().await?;
    let rbs = rb_api(&env).await?;
    let mut before = Vec::new();
    for (name, replicas, placement) in fixtures::explain_cases() {
        env.apply_json(&binding(name, replicas, placement, "default-scheduler"))
            .await?;
        let e = explain(&env, name)?;
        assert_eq!(e["daemonActs"], true, "{name}: {e}");
        before.push((name, e));
    }
    let health = format!("127.0.0.1:{}", testenv::free_port());
    let health_flag = format!("--health-probe-bind-address={health}");
    let token = token_of(&env, "explain-reader", true).await?;
    let ours = OurScheduler::start(
        &env,
        &[
            "--enable-scheduler-estimator=true",
            "--enable-explain-endpoint=true",
            &health_flag,
        ],
    )
    .await?;
    for (name, e) in &before {
        let rb = wait_scheduled(&rbs, name)
            .await
            .map_err(|err| ours.explain(err))?;
        let cond = scheduled_condition(&rb).unwrap_or_default();
        assert_eq!(
            placed(&clusters_of(&rb)),
            placed(&e["clusters"]),
            "{name}: explain said {e}"
        );
        assert_eq!(cond["message"], e["message"], "{name}");
        let scheduled = cond["status"] == "True";
        assert_eq!(scheduled, e["result"] == "Scheduled", "{name}: {cond}");
        // What explain showed as the result patch is what landed.
        if scheduled {
            let main = e["patches"]
                .as_array()
                .and_then(|p| p.iter().find(|p| p["target"] == "main"))
                .unwrap_or_else(|| panic!("{name}: no result patch in {e}"));
            assert_eq!(
                placed(&main["patch"]["spec"]["clusters"]),
                placed(&clusters_of(&rb)),
                "{name}"
            );
        }
    }
    // Scheduled: the daemon would not act on them any more ("no action" decisions), and an
    // attempt still gives what was written.
    for (name, _) in &before {
        let rb = rbs.get(name).await?;
        if scheduled_condition(&rb).is_some_and(|c| c["status"] == "True") {
            let e = explain(&env, name)?;
            let dup = *name == "x-dup";
            // Duplicated placements are scheduled again on every change, as upstream.
            assert_eq!(e["daemonActs"], dup, "{name}: {e}");
            assert_eq!(placed(&e["clusters"]), placed(&clusters_of(&rb)), "{name}");
            // The daemon's endpoint, from its live cache, says the same.
            let live =
                http_get_json(&health, &format!("/debug/explain/default/{name}"), &token).await?;
            assert_eq!(live["daemonActs"], dup, "{name}: {live}");
            assert_eq!(
                placed(&live["clusters"]),
                placed(&clusters_of(&rb)),
                "{name}"
            );
            assert_eq!(live["decision"], e["decision"], "{name}");
        }
    }
    let missing = http_get_json(&health, "/debug/explain/default/no-such-binding", &token).await;
    assert!(missing.is_err(), "{missing:?}");
    ours.shutdown().await?;
    env.stop();
    Ok(())
}

/// With `WorkloadAffinity` on, where a binding of a workload (anti-)affinity group may go
/// depends on the other bindings of its group: explain reads them as the daemon's group index
/// does, so what it says is what the daemon then writes (and the group decides it: the
/// follower lands beside its peer, the avoider away from its anti-peer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_and_the_daemon_agree_on_workload_groups() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("explain_and_the_daemon_agree_on_workload_groups") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).start().await?;
    let rbs = rb_api(&env).await?;
    let gate = "--feature-gates=WorkloadAffinity=true";
    let cases = fixtures::workload_group_cases();
    for (peer, b) in &cases {
        env.apply_json(peer).await?;
        env.apply_json(b).await?;
    }
    let mut before = Vec::new();
    for (_, b) in &cases {
        let name = b["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let e = explain_with(&env, &name, &[gate])?;
        assert_eq!(e["daemonActs"], true, "{name}: {e}");
        before.push((name, e));
    }
    let ours = OurScheduler::start(&env, &[gate]).await?;
    for (name, e) in &before {
        let rb = wait_scheduled(&rbs, name)
            .await
            .map_err(|err| ours.explain(err))?;
        let cond = scheduled_condition(&rb).unwrap_or_default();
        assert_eq!(
            (cond["status"] == "True", &cond["message"]),
            (e["result"] == "Scheduled", &e["message"]),
            "{name}: the daemon wrote {cond}, explain said {e}"
        );
        assert_eq!(
            placed(&clusters_of(&rb)),
            placed(&e["clusters"]),
            "{name}: explain said {e}"
        );
    }
    let want = |clusters: &[&str]| -> Vec<(String, i64)> {
        clusters.iter().map(|c| (c.to_string(), 1)).collect()
    };
    let landed = |name: &str| {
        let e = &before.iter().find(|(n, _)| n == name).expect(name).1;
        placed(&e["clusters"])
    };
    assert_eq!(landed("wa-follow"), want(&["member2"]));
    assert_eq!(landed("wa-avoid"), want(&["member2", "member3"]));
    ours.shutdown().await?;
    env.stop();
    Ok(())
}

/// `/debug/explain` answers only callers the Karmada API server vouches for: no token or a
/// token it does not accept gets 401, a token without `get` on the binding 403, and one with
/// it the explanation. The daemon runs as the chart's ServiceAccount, with the RBAC the chart
/// renders when the endpoint is enabled (which lets it ask for the reviews).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explain_endpoint_answers_only_callers_who_may_get_the_binding() -> anyhow::Result<()> {
    let test = "the_explain_endpoint_answers_only_callers_who_may_get_the_binding";
    let Some(tools) = tools_or_skip(test) else {
        return Ok(());
    };
    let Some(helm) = testenv::helm::helm_or_skip(test) else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let docs = testenv::rbac::chart_rbac(
        &helm,
        testenv::rbac::Daemon::Scheduler,
        "guard",
        &["scheduler.enableExplainEndpoint=true"],
    );
    let id = testenv::rbac::service_account_kubeconfig(&env, &docs).await?;
    let rbs = rb_api(&env).await?;
    let (name, replicas, placement) = fixtures::explain_cases()
        .into_iter()
        .find(|(n, _, _)| *n == "x-dup")
        .expect("x-dup");
    env.apply_json(&binding(name, replicas, placement, "default-scheduler"))
        .await?;
    let health = format!("127.0.0.1:{}", testenv::free_port());
    let args = vec![
        format!("--kubeconfig={}", id.kubeconfig.display()),
        "--leader-elect=false".to_string(),
        "--enable-explain-endpoint=true".to_string(),
        "--metrics-bind-address=0".to_string(),
        format!("--health-probe-bind-address={health}"),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    let daemon = env.spawn_process("rs-guarded", bin, &args)?;
    wait_scheduled(&rbs, name)
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", daemon.log_tail(30)))?;
    let reader = token_of(&env, "explain-reader", true).await?;
    let nobody = token_of(&env, "explain-nobody", false).await?;
    let path = format!("/debug/explain/default/{name}");

    let (code, body) = http_get_as(&health, &path, None).await?;
    assert_eq!(code, 401, "{body}");
    let (code, body) = http_get_as(&health, &path, Some("not-a-token")).await?;
    assert_eq!(code, 401, "{body}");
    let (code, body) = http_get_as(&health, &path, Some(&nobody)).await?;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("explain-nobody"), "{body}");
    // The right is checked on the binding asked for: not another namespace's, nor a
    // cluster-scoped one.
    let (code, body) = http_get_as(&health, "/debug/explain/other/x", Some(&reader)).await?;
    assert_eq!(code, 403, "{body}");
    let (code, body) = http_get_as(&health, "/debug/explain/some-crb", Some(&reader)).await?;
    assert_eq!(code, 403, "{body}");
    let live = http_get_json(&health, &path, &reader).await?;
    assert_eq!(live["name"], name, "{live}");
    assert_eq!(live["daemonActs"], true, "{live}");
    // Asked again within the cache's lifetime: the same answers.
    assert_eq!(http_get_as(&health, &path, Some(&nobody)).await?.0, 403);
    assert_eq!(http_get_as(&health, &path, Some(&reader)).await?.0, 200);
    let log = std::fs::read_to_string(daemon.log_path())?;
    assert!(
        !log.contains(&reader) && !log.contains(&nobody),
        "a token in the log"
    );
    drop(daemon);

    // Without the review rules (the chart's RBAC with the endpoint off), callers get 503 with
    // the API server's refusal, and the log says what the daemon lacks.
    let docs = testenv::rbac::chart_rbac(&helm, testenv::rbac::Daemon::Scheduler, "noreview", &[]);
    let id = testenv::rbac::service_account_kubeconfig(&env, &docs).await?;
    let mut args = args;
    args[0] = format!("--kubeconfig={}", id.kubeconfig.display());
    let daemon = env.spawn_process("rs-noreview", bin, &args)?;
    let (code, body) = testenv::wait_for("an answer", Duration::from_secs(60), || async {
        let Ok((code, body)) = http_get_as(&health, &path, Some(&reader)).await else {
            return Ok(None);
        };
        Ok((!body.contains("not scheduling yet")).then_some((code, body)))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", daemon.log_tail(30)))?;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("tokenreviews"), "{body}");
    let log = std::fs::read_to_string(daemon.log_path())?;
    assert!(log.contains("needs create on tokenreviews"), "{log}");
    drop(daemon);
    env.stop();
    Ok(())
}
