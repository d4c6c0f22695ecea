//! `/metrics` parity with the Go scheduler: on one control plane, the Go v1.18.2 scheduler and
//! ours each schedule a few bindings (and see a cluster change); then every metric family the
//! Go binary serves must be served by ours, or be listed with its reason in the "Metrics not
//! exported" table of docs/compatibility.md. Types must agree for every family both serve, and
//! label names (and the queue names) for the client-go families dashboards group by.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;
use testenv::{TestEnv, free_port, tools_or_skip, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;

/// The body of `GET /metrics` (HTTP/1.0: neither server chunks the answer), or "".
async fn scrape(addr: &str) -> String {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let _ = s
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .await;
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf).await;
    let Some((head, body)) = buf.split_once("\r\n\r\n") else {
        return String::new();
    };
    if !head.starts_with("HTTP/1.") || !head.lines().next().unwrap_or("").contains(" 200") {
        return String::new();
    }
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return dechunk(body);
    }
    body.to_string()
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Family name → type, from the `# TYPE` lines. A counter is named with its `_total` (the
/// Prometheus text format names the family so, OpenMetrics without it; the samples are the
/// same).
fn families(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let (name, kind) = l.split_once(' ')?;
            let name = if kind == "counter" {
                format!("{}_total", name.strip_suffix("_total").unwrap_or(name))
            } else {
                name.to_string()
            };
            Some((name, kind.trim().to_string()))
        })
        .collect()
}

/// The labels of one sample line `name{a="x",b="y"} value` (values unescaped enough for the
/// label values seen here).
fn sample_labels(line: &str) -> Option<(String, BTreeMap<String, String>)> {
    let (name, rest) = line.split_once('{')?;
    let (inner, _) = rest.rsplit_once('}')?;
    let mut labels = BTreeMap::new();
    let mut rest = inner;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        value.push(e);
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        labels.insert(key.trim_start_matches(',').trim().to_string(), value);
        rest = &after[end..];
    }
    Some((name.to_string(), labels))
}

/// The label sets of the samples of `family` (exactly that sample name).
fn label_sets(text: &str, family: &str) -> Vec<BTreeMap<String, String>> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(sample_labels)
        .filter(|(name, _)| name == family)
        .map(|(_, l)| l)
        .collect()
}

fn label_names(text: &str, family: &str) -> BTreeSet<BTreeSet<String>> {
    label_sets(text, family)
        .into_iter()
        .map(|l| l.into_keys().collect())
        .collect()
}

fn label_values(text: &str, family: &str, label: &str) -> BTreeSet<String> {
    label_sets(text, family)
        .into_iter()
        .filter_map(|mut l| l.remove(label))
        .collect()
}

/// The value of the sample of `family` whose `name` label is `queue`.
fn queue_value(text: &str, family: &str, queue: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| {
            sample_labels(l).is_some_and(|(n, labels)| {
                n == family && labels.get("name").map(String::as_str) == Some(queue)
            })
        })?
        .rsplit(' ')
        .next()?
        .parse()
        .ok()
}

/// The rows of the "Metrics not exported" table: `(name or prefix*, reason)`.
fn not_exported() -> Vec<(String, String)> {
    let path = testenv::repo_root().join("docs/compatibility.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Metrics not exported"))
        .expect("docs/compatibility.md has a section \"## Metrics not exported\"");
    let rows: Vec<(String, String)> = section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert!(cells.len() >= 2, "a table row is `| name | reason |`: {l}");
            (cells[0].trim_matches('`').to_string(), cells[1].to_string())
        })
        .collect();
    assert!(!rows.is_empty(), "the table has no rows:\n{section}");
    for (name, reason) in &rows {
        assert!(!reason.is_empty(), "{name} has no reason");
    }
    rows
}

fn listed(rows: &[(String, String)], family: &str) -> bool {
    rows.iter().any(|(name, _)| match name.strip_suffix('*') {
        Some(prefix) => family.starts_with(prefix),
        None => family == name,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_go_metric_family_is_served_or_documented() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("every_go_metric_family_is_served_or_documented") else {
        return Ok(());
    };
    let rows = not_exported();
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let mut go = env.spawn_go_scheduler(&[
        "--enable-scheduler-estimator=true",
        "--scheduler-name=go-scheduler",
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let go_addr = go.metrics_address().expect("a scheduler").to_string();
    let our_addr = format!("127.0.0.1:{}", free_port());
    // With v1.18.2's queue: the legacy queue registers `scheduler-queue`'s workqueue
    // metrics, the priority queue (v1.19.0's default) none.
    let metrics_flag = format!("--metrics-bind-address={our_addr}");
    let mut flags = vec!["--enable-scheduler-estimator=true", metrics_flag.as_str()];
    flags.extend(testenv::AS_V1_18_2);
    let ours = OurScheduler::start(&env, &flags).await?;

    let rbs = rb_api(&env).await?;
    let placements = [
        json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]}}),
        json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided",
                                     "replicaDivisionPreference": "Weighted",
                                     "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
    ];
    for (i, placement) in placements.iter().enumerate() {
        for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
            let b = binding(&format!("m{i}-{suffix}"), 2, placement.clone(), sched);
            env.apply_json(&b).await?;
        }
    }
    for i in 0..placements.len() {
        for suffix in ["rs", "go"] {
            wait_scheduled(&rbs, &format!("m{i}-{suffix}"))
                .await
                .map_err(|e| ours.explain(e))?;
        }
    }
    // A label change goes through each scheduler's ClusterReconcileWorker (old and new object).
    cluster_api(&env)
        .await?
        .patch(
            "member1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"metrics-e2e": "changed"}}})),
        )
        .await?;

    // Both have finished their work (the counts settle just after the status writes).
    let (go_text, our_text) = wait_for("both schedulers' metrics", WAIT, || async {
        let (g, o) = (scrape(&go_addr).await, scrape(&our_addr).await);
        let done = |t: &str| {
            queue_value(
                t,
                "workqueue_work_duration_seconds_count",
                "scheduler-queue",
            )
            .is_some_and(|n| n >= 2.0)
                && queue_value(t, "workqueue_adds_total", "ClusterReconcileWorker")
                    .is_some_and(|n| n >= 2.0)
        };
        Ok((done(&g) && done(&o)).then_some((g, o)))
    })
    .await
    .map_err(|e| ours.explain(e))?;

    let go_families = families(&go_text);
    let our_families = families(&our_text);
    assert!(go_families.len() > 20, "{go_text}");

    // 1. Every Go family is ours or documented; the table lists only what Go serves and we do
    //    not.
    let missing: Vec<&String> = go_families
        .keys()
        .filter(|f| !our_families.contains_key(*f) && !listed(&rows, f))
        .collect();
    assert!(
        missing.is_empty(),
        "served by the Go scheduler, neither by ours nor listed in docs/compatibility.md \
         \"Metrics not exported\": {missing:?}"
    );
    for (name, _) in &rows {
        assert!(
            go_families
                .keys()
                .any(|f| listed(&[(name.clone(), String::new())], f)),
            "docs/compatibility.md lists {name}, which the Go scheduler does not serve"
        );
        assert!(
            !our_families
                .keys()
                .any(|f| listed(&[(name.clone(), String::new())], f)),
            "docs/compatibility.md lists {name} as not exported, but we serve it"
        );
    }

    // 2. Types agree wherever both serve a family; the families of this change are there.
    for (family, kind) in &go_families {
        if let Some(ours) = our_families.get(family) {
            assert_eq!(ours, kind, "TYPE of {family}");
        }
    }
    for family in [
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries_total",
        "rest_client_requests_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_virtual_memory_max_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "process_network_receive_bytes_total",
        "process_network_transmit_bytes_total",
        "karmada_scheduler_schedule_attempts_total",
        "karmada_scheduler_e2e_scheduling_duration_seconds",
    ] {
        assert!(go_families.contains_key(family), "Go serves {family}");
        assert!(our_families.contains_key(family), "we serve {family}");
    }

    // 3. Label names of the client-go families, and the queues they are about.
    for family in [
        "rest_client_requests_total",
        "workqueue_adds_total",
        "workqueue_depth",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
    ] {
        let go_names = label_names(&go_text, family);
        assert!(!go_names.is_empty(), "Go has samples of {family}");
        assert_eq!(
            label_names(&our_text, family),
            go_names,
            "labels of {family}"
        );
    }
    let go_queues = label_values(&go_text, "workqueue_adds_total", "name");
    assert_eq!(
        go_queues,
        [
            "ClusterReconcileWorker",
            "scheduler-estimator",
            "scheduler-queue"
        ]
        .map(String::from)
        .into(),
        "the Go scheduler's queues"
    );
    for label in ["name", "controller"] {
        assert_eq!(
            label_values(&our_text, "workqueue_adds_total", label),
            go_queues,
            "{label} values of workqueue_adds_total"
        );
    }
    // Same API server: the same host; the verbs the Go scheduler used, ours used too.
    let hosts = label_values(&go_text, "rest_client_requests_total", "host");
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!(
        label_values(&our_text, "rest_client_requests_total", "host"),
        hosts
    );
    let our_methods = label_values(&our_text, "rest_client_requests_total", "method");
    for m in ["GET", "PATCH", "POST"] {
        assert!(our_methods.contains(m), "{our_methods:?}");
    }

    ours.shutdown().await?;
    go.kill();
    Ok(())
}

/// The same parity with the priority queue, v1.19.0's default (the Go v1.18.2 scheduler with
/// `--feature-gates=PriorityBasedScheduling=true`, ours at its default): every Go family is
/// served or documented, no `scheduler-queue` work-queue series on either side, and every
/// `karmada_scheduler_*` family Go serves is ours with the same type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_queue_metric_families_match_go() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("priority_queue_metric_families_match_go") else {
        return Ok(());
    };
    let rows = not_exported();
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let mut go = env.spawn_go_scheduler(&[
        "--scheduler-name=go-scheduler",
        "--feature-gates=PriorityBasedScheduling=true",
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    let go_addr = go.metrics_address().expect("a scheduler").to_string();
    let our_addr = format!("127.0.0.1:{}", free_port());
    // A process of its own: client metrics are process-wide, and the other test of this
    // file runs its scheduler in this process.
    let mut ours = env.spawn_process(
        "rs-scheduler-pq",
        std::path::Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
        &[
            format!("--kubeconfig={}", env.kubeconfig().display()),
            "--leader-elect=false".to_string(),
            format!("--metrics-bind-address={our_addr}"),
            format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        ],
    )?;
    let explain = |e: anyhow::Error, ours: &mut testenv::GoProcess| {
        anyhow::anyhow!("{e:#}\nour scheduler's log:\n{}", ours.log_tail(30))
    };
    let rbs = rb_api(&env).await?;
    for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
        let placement = json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]}});
        env.apply_json(&binding(&format!("pq-{suffix}"), 2, placement, sched))
            .await?;
    }
    for suffix in ["rs", "go"] {
        if let Err(e) = wait_scheduled(&rbs, &format!("pq-{suffix}")).await {
            return Err(explain(e, &mut ours));
        }
    }
    let scraped = wait_for("both schedulers' metrics", WAIT, || async {
        let (g, o) = (scrape(&go_addr).await, scrape(&our_addr).await);
        let done = |t: &str| t.contains("karmada_scheduler_schedule_attempts_total{");
        Ok((done(&g) && done(&o)).then_some((g, o)))
    })
    .await;
    let (go_text, our_text) = match scraped {
        Ok(t) => t,
        Err(e) => return Err(explain(e, &mut ours)),
    };
    let go_families = families(&go_text);
    let our_families = families(&our_text);
    let missing: Vec<&String> = go_families
        .keys()
        .filter(|f| !our_families.contains_key(*f) && !listed(&rows, f))
        .collect();
    assert!(missing.is_empty(), "priority queue: Go serves {missing:?}");
    for text in [&go_text, &our_text] {
        assert_eq!(
            queue_value(text, "workqueue_adds_total", "scheduler-queue"),
            None,
            "no scheduler-queue work queue with the priority queue"
        );
    }
    for (family, kind) in go_families
        .iter()
        .filter(|(k, _)| k.starts_with("karmada_scheduler_"))
    {
        assert_eq!(our_families.get(family), Some(kind), "{family}");
    }
    ours.kill();
    go.kill();
    Ok(())
}
