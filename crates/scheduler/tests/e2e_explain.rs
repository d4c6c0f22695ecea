//! `karmada-scheduler explain` against the local control plane with real Go estimators: for
//! bindings of every replica strategy, explain (which runs the daemon's cycle against a copy
//! in memory) says the daemon will act, and the clusters it reports are the ones the daemon
//! then writes. Once they are scheduled, explain says the daemon would not act, and its
//! attempt still lands where the daemon's did; the daemon's own `/debug/explain` endpoint
//! (`--enable-explain-endpoint`), answering from its live cache, says the same. With the
//! `WorkloadAffinity` gate, explain reads the other bindings of a workload group as the
//! daemon's group index does, and says where a binding of the group lands as the daemon then
//! writes it. The endpoint serves a valid reader within a second through a flood of made-up
//! tokens, whether the flood comes from other addresses or from the reader's own.
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

/// Answers of each status.
type Counts = std::collections::BTreeMap<u16, u64>;

/// The status of one response read from `r`, its body skipped.
async fn read_response<R>(r: &mut R) -> anyhow::Result<u16>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut line = String::new();
    anyhow::ensure!(r.read_line(&mut line).await? > 0, "closed");
    let code = line.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut len = 0;
    loop {
        line.clear();
        anyhow::ensure!(r.read_line(&mut line).await? > 0, "closed");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse()?;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await?;
    Ok(code)
}

/// GETs of `path` on `addr` from the address `from`, each with a new made-up bearer token
/// (`id` tells this client's apart from any other's), one after the other on a kept-alive
/// connection, until `stop`: the statuses answered.
async fn flood_client(
    addr: std::net::SocketAddr,
    from: std::net::IpAddr,
    id: String,
    path: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<Counts> {
    use std::sync::atomic::Ordering;
    use tokio::io::AsyncWriteExt;
    let mut counts = Counts::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(std::net::SocketAddr::new(from, 0))?;
        let mut conn = tokio::io::BufReader::new(socket.connect(addr).await?);
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let req = format!(
                "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer made-up-{id}-{n}\r\n\r\n"
            );
            if conn.get_mut().write_all(req.as_bytes()).await.is_err() {
                break;
            }
            match read_response(&mut conn).await {
                Ok(code) => *counts.entry(code).or_default() += 1,
                Err(_) => break,
            }
        }
    }
    Ok(counts)
}

/// Flood clients and a probe of `/healthz` every 100 ms, running until [`Flood::stop`].
struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    clients: Vec<tokio::task::JoinHandle<anyhow::Result<Counts>>>,
    probes: tokio::task::JoinHandle<Vec<(u16, Duration)>>,
    started: std::time::Instant,
}

/// What a flood got: its answers, how long it ran, and the probes' statuses and latencies.
struct Flooded {
    counts: Counts,
    secs: f64,
    probes: Vec<(u16, Duration)>,
}

impl Flooded {
    fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    fn of(&self, code: u16) -> u64 {
        self.counts.get(&code).copied().unwrap_or(0)
    }

    fn slowest_probe(&self) -> Duration {
        self.probes.iter().map(|p| p.1).max().unwrap_or_default()
    }
}

impl Flood {
    /// Two clients from each of `sources`; `name` tells this flood's tokens from others'.
    fn start(health: &str, name: &str, path: &str, sources: &[[u8; 4]]) -> anyhow::Result<Self> {
        let addr: std::net::SocketAddr = health.parse()?;
        let started = std::time::Instant::now();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut clients = Vec::new();
        for (i, ip) in sources.iter().flat_map(|s| [s, s]).enumerate() {
            clients.push(tokio::spawn(flood_client(
                addr,
                std::net::IpAddr::from(*ip),
                format!("{name}-{i}"),
                path.to_string(),
                stop.clone(),
            )));
        }
        let (stop_probing, health) = (stop.clone(), health.to_string());
        let probes = tokio::spawn(async move {
            let mut probes = Vec::new();
            while !stop_probing.load(std::sync::atomic::Ordering::Relaxed) {
                let t = std::time::Instant::now();
                let code = http_get_as(&health, "/healthz", None)
                    .await
                    .map_or(0, |a| a.0);
                probes.push((code, t.elapsed()));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            probes
        });
        Ok(Self {
            stop,
            clients,
            probes,
            started,
        })
    }

    async fn stop(self) -> anyhow::Result<Flooded> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut counts = Counts::new();
        for c in self.clients {
            for (code, n) in c.await?? {
                *counts.entry(code).or_default() += n;
            }
        }
        let secs = self.started.elapsed().as_secs_f64();
        Ok(Flooded {
            counts,
            secs,
            probes: self.probes.await?,
        })
    }
}

/// How long until `token` gets a 200 on `path` (trying again at once on anything else), and
/// the answers before it (0: no answer); `None` if none came within `within`.
async fn time_to_200(
    health: &str,
    path: &str,
    token: &str,
    within: Duration,
) -> (Option<Duration>, Counts) {
    let t = std::time::Instant::now();
    let mut before = Counts::new();
    while t.elapsed() < within {
        match http_get_as(health, path, Some(token)).await {
            Ok((200, _)) => return (Some(t.elapsed()), before),
            Ok((code, _)) => *before.entry(code).or_default() += 1,
            Err(_) => *before.entry(0).or_default() += 1,
        }
    }
    (None, before)
}

/// The TokenReviews the API server has answered so far (its `apiserver_request_total`).
fn token_reviews(env: &TestEnv) -> anyhow::Result<u64> {
    let out = env.kubectl().args(["get", "--raw", "/metrics"]).output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| l.contains("resource=\"tokenreviews\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

/// The most TokenReviews that tokens not seen valid may cause in `secs` from `addresses`
/// addresses, by the endpoint's budgets.
fn review_bound(addresses: usize, secs: f64) -> u64 {
    use karmada_scheduler::explain::budget::*;
    let per_address = addresses as f64 * (SOURCE_BURST + SOURCE_QPS * secs);
    let total = UNKNOWN_BURST + UNKNOWN_QPS * secs;
    per_address.min(total).floor() as u64
}

/// A daemon (as the admin) with the endpoint on, once it has scheduled `x-dup` and its
/// endpoint reviews tokens: the daemon, its health address, and the path of `x-dup`.
async fn explaining_daemon(env: &TestEnv) -> anyhow::Result<(testenv::GoProcess, String, String)> {
    let rbs = rb_api(env).await?;
    let (name, replicas, placement) = fixtures::explain_cases()
        .into_iter()
        .find(|(n, _, _)| *n == "x-dup")
        .expect("x-dup");
    env.apply_json(&binding(name, replicas, placement, "default-scheduler"))
        .await?;
    let health = format!("127.0.0.1:{}", testenv::free_port());
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--enable-explain-endpoint=true".to_string(),
        "--metrics-bind-address=0".to_string(),
        format!("--health-probe-bind-address={health}"),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    let daemon = env.spawn_process("rs-flooded", bin, &args)?;
    wait_scheduled(&rbs, name)
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", daemon.log_tail(30)))?;
    let path = format!("/debug/explain/default/{name}");
    testenv::wait_for("the endpoint", Duration::from_secs(60), || async {
        let answer = http_get_as(&health, &path, Some("not-a-token")).await;
        Ok(answer.is_ok_and(|(code, _)| code == 401).then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", daemon.log_tail(30)))?;
    Ok((daemon, health, path))
}

/// Eight addresses flood `/debug/explain` with made-up bearer tokens (a new one each time,
/// so no cached refusal helps): a reader with a fresh token from another address still gets
/// its 200 within a second, the probes stay fast, and the flood's TokenReviews stay within
/// the budgets for unknown tokens. Then the flood comes from the reader's own address: the
/// reader, whose token the API server accepted before the flood, still gets its 200 within a
/// second once its cached verdict has expired (its token is re-reviewed on the known callers'
/// budget). (A fresh token from that address competes with the flood for the address's share:
/// what it got is printed, not asserted.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_reader_gets_its_explanation_through_a_flood_of_made_up_tokens()
-> anyhow::Result<()> {
    let test = "a_valid_reader_gets_its_explanation_through_a_flood_of_made_up_tokens";
    let Some(tools) = tools_or_skip(test) else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let (daemon, health, path) = explaining_daemon(&env).await?;
    let reader = token_of(&env, "flood-reader", true).await?;
    let fresh = token_of(&env, "flood-latecomer", true).await?;

    // The flood from eight other addresses; the reader's token is new to the daemon.
    let flooders: Vec<[u8; 4]> = (2..10).map(|i| [127, 0, 0, i]).collect();
    let before = token_reviews(&env)?;
    let flood = Flood::start(&health, "others", &path, &flooders)?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (took, refused) = time_to_200(&health, &path, &reader, Duration::from_secs(1)).await;
    let seen_valid = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let a = flood.stop().await?;
    let reviews = token_reviews(&env)? - before;
    eprintln!(
        "other addresses: {} requests in {:.1} s ({:.0}/s): {:?}; {reviews} TokenReviews; \
         the reader's 200 after {took:?} ({refused:?} before); slowest probe {:?} of {}",
        a.total(),
        a.secs,
        a.total() as f64 / a.secs,
        a.counts,
        a.slowest_probe(),
        a.probes.len()
    );
    let took = took.unwrap_or_else(|| panic!("no 200 for the reader within 1 s: {refused:?}"));
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(a.of(429) >= 1000, "not much of a flood: {:?}", a.counts);
    assert_eq!(a.total(), a.of(401) + a.of(429), "{:?}", a.counts);
    let bound = review_bound(flooders.len(), a.secs);
    assert!(a.of(401) <= bound, "{:?}, bound {bound}", a.counts);
    // Each 401 is one TokenReview of a made-up token; the reader's adds one.
    assert!(
        (a.of(401) + 1..=bound + 1).contains(&reviews),
        "{reviews} TokenReviews for {:?}, bound {bound}",
        a.counts
    );
    assert!(a.probes.iter().all(|p| p.0 == 200), "{:?}", a.probes);
    assert!(a.slowest_probe() < Duration::from_secs(1), "{:?}", a.probes);

    // The flood from the reader's own address, until the reader's verdict has expired.
    let before = token_reviews(&env)?;
    let flood = Flood::start(&health, "shared", &path, &[[127, 0, 0, 1]])?;
    let expired = karmada_scheduler::explain::guard::VERDICT_TTL + Duration::from_millis(500);
    tokio::time::sleep(expired.saturating_sub(seen_valid.elapsed())).await;
    let (took, refused) = time_to_200(&health, &path, &reader, Duration::from_secs(1)).await;
    let latecomer = http_get_as(&health, &path, Some(&fresh)).await?;
    let b = flood.stop().await?;
    let reviews = token_reviews(&env)? - before;
    eprintln!(
        "the reader's address: {} requests in {:.1} s ({:.0}/s): {:?}; {reviews} TokenReviews; \
         the reader's 200 after {took:?} ({refused:?} before); a new token got {}; \
         slowest probe {:?} of {}",
        b.total(),
        b.secs,
        b.total() as f64 / b.secs,
        b.counts,
        latecomer.0,
        b.slowest_probe(),
        b.probes.len()
    );
    let took = took.unwrap_or_else(|| panic!("no 200 for the reader within 1 s: {refused:?}"));
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(b.of(429) >= 1000, "not much of a flood: {:?}", b.counts);
    let bound = review_bound(1, b.secs);
    assert!(b.of(401) <= bound, "{:?}, bound {bound}", b.counts);
    // The reader's token was reviewed again (its verdict had expired), besides the flood's.
    assert!(
        (b.of(401) + 1..=bound + 1).contains(&reviews),
        "{reviews} TokenReviews for {:?}, bound {bound}",
        b.counts
    );
    assert!(b.probes.iter().all(|p| p.0 == 200), "{:?}", b.probes);
    assert!(b.slowest_probe() < Duration::from_secs(1), "{:?}", b.probes);
    drop(daemon);
    env.stop();
    Ok(())
}
