//! Least privilege for real: the scheduler binary, run with the token of the chart's
//! ServiceAccount bound to exactly the RBAC the chart renders (rendered by the real helm, see
//! `testenv::rbac`) instead of the admin certificate, against the local control plane with the
//! Go estimators: it wins its Lease, schedules bindings of several strategies with the
//! estimators' answers, writes their status and records Events, and no request is refused.
//! Then the same with `create` on `events` taken from the role: a warning names the verb,
//! resource, namespace and identity once (not once per event), the refusal counter says the
//! same, no Event is written — and the bindings are scheduled all the same. Last, an older
//! role without `list`/`watch` on EndpointSlices: the same warning for that namespaced rule,
//! and the estimators (behind ExternalName Services) are still asked.
//!
//! Skipped when the Go binaries or helm are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::Path;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use testenv::rbac::{self, Daemon, Identity};
use testenv::{GoProcess, TestEnv, fixtures, free_port, helm::helm_or_skip, http_get};
use testenv::{tools_or_skip, wait_for};

use common::*;

/// Cases of `fixtures::scheduling_cases` that schedule (estimator-driven ones among them).
const SCHEDULED: &[&str] = &["dup", "static", "dynamic", "aggregated"];

/// Our scheduler binary with `identity`'s kubeconfig, leader election on the Lease `lease`.
fn spawn(
    env: &TestEnv,
    name: &str,
    identity: &Identity,
    lease: &str,
    metrics: &str,
) -> anyhow::Result<GoProcess> {
    let args = vec![
        format!("--kubeconfig={}", identity.kubeconfig.display()),
        "--leader-elect=true".to_string(),
        format!("--leader-elect-resource-name={lease}"),
        "--enable-scheduler-estimator=true".to_string(),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ];
    env.spawn_process(
        name,
        Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
        &args,
    )
}

/// Applies the cases named in `SCHEDULED` plus `nofit` and the cluster-scoped `crb-dup`, with
/// `suffix` on their names, and waits until each has its `Scheduled` condition.
async fn schedule_cases(env: &TestEnv, suffix: &str, process: &GoProcess) -> anyhow::Result<()> {
    let rbs = rb_api(env).await?;
    let crbs = crb_api(env).await?;
    let explain =
        |e: anyhow::Error| anyhow::anyhow!("{e:#}\nscheduler log:\n{}", process.log_tail(40));
    let cases: Vec<_> = fixtures::scheduling_cases()
        .into_iter()
        .filter(|(n, _, _)| SCHEDULED.contains(n) || *n == "nofit")
        .collect();
    for (name, replicas, placement) in &cases {
        let b = binding(
            &format!("{name}-{suffix}"),
            *replicas,
            placement.clone(),
            "default-scheduler",
        );
        env.apply_json(&b).await?;
    }
    let (crb, placement) = fixtures::scheduling_crb_cases()
        .into_iter()
        .find(|(n, _)| *n == "crb-dup")
        .expect("crb-dup");
    env.apply_json(&cluster_binding(
        &format!("{crb}-{suffix}"),
        placement,
        "default-scheduler",
    ))
    .await?;
    for (name, _, _) in &cases {
        let rb = wait_scheduled(&rbs, &format!("{name}-{suffix}"))
            .await
            .map_err(explain)?;
        let cond = scheduled_condition(&rb).unwrap_or_default();
        let want = if SCHEDULED.contains(name) {
            "True"
        } else {
            "False"
        };
        assert_eq!(cond["status"], want, "{name}-{suffix}: {cond}");
        if want == "True" {
            assert_ne!(clusters_of(&rb), serde_json::json!([]), "{name}-{suffix}");
        }
    }
    wait_scheduled(&crbs, &format!("{crb}-{suffix}"))
        .await
        .map_err(explain)?;
    Ok(())
}

/// The value of one series in a Prometheus text exposition, 0 when absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The sum of every series of `family` (0 when it has none).
fn family_sum(text: &str, family: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

const FORBIDDEN: &str = "karmada_scheduler_forbidden_requests_total";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_works_with_the_charts_rbac_only() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("scheduler_works_with_the_charts_rbac_only") else {
        return Ok(());
    };
    let Some(helm) = helm_or_skip("scheduler_works_with_the_charts_rbac_only") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    for cluster in fixtures::extra_clusters() {
        env.apply_json(&cluster).await?;
    }

    // The chart's RBAC, exactly.
    let docs = rbac::chart_rbac(&helm, Daemon::Scheduler, "ksrs", &[]);
    let id = rbac::service_account_kubeconfig(&env, &docs).await?;
    let text = std::fs::read_to_string(&id.kubeconfig)?;
    assert!(
        text.contains("token:") && !text.contains("client-certificate"),
        "a token, not a certificate:\n{text}"
    );
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut full = spawn(&env, "rs-scheduler", &id, "karmada-scheduler", &metrics)?;
    schedule_cases(&env, "rbac", &full).await?;
    // Events on the bindings, recorded by this identity's scheduler.
    let recorded = wait_for("events of dup-rbac", WAIT, || async {
        let e = events_about(&env, "default", "ResourceBinding", "dup-rbac").await?;
        Ok((!e.is_empty()).then_some(e))
    })
    .await?;
    assert!(
        recorded
            .iter()
            .any(|(_, r, _)| r == "ScheduleBindingSucceed"),
        "{recorded:?}"
    );
    // The Lease, held by this process.
    let leases: Api<Lease> = Api::namespaced(env.client().await?, "karmada-system");
    let lease = leases.get("karmada-scheduler").await?;
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(!holder.is_empty(), "the Lease has no holder");
    // Nothing refused.
    let (code, body) = http_get(&metrics, "/metrics").await?;
    assert_eq!(code, 200);
    assert_eq!(
        family_sum(&body, FORBIDDEN),
        0.0,
        "requests refused with the chart's RBAC:\n{}",
        full.log_tail(60)
    );
    let log = std::fs::read_to_string(full.log_path())?;
    assert!(!log.contains("forbidden"), "{log}");
    full.kill();

    // The same without `create` on events (another release: its own names and Lease).
    let mut docs = rbac::chart_rbac(
        &helm,
        Daemon::Scheduler,
        "noevents",
        &["scheduler.leaderElectResourceName=karmada-scheduler-noevents"],
    );
    rbac::without_verb(&mut docs, "", "events", "create")?;
    let id = rbac::service_account_kubeconfig(&env, &docs).await?;
    let metrics = format!("127.0.0.1:{}", free_port());
    let started = std::time::Instant::now();
    let lacking = spawn(
        &env,
        "rs-scheduler-noevents",
        &id,
        "karmada-scheduler-noevents",
        &metrics,
    )?;
    schedule_cases(&env, "noevents", &lacking).await?;
    let line = format!(
        "forbidden: \"{}\" may not create resource \"events\" in API group \"\" in the namespace \"default\"",
        id.user
    );
    let log = wait_for("the forbidden warning", WAIT, || async {
        let log = std::fs::read_to_string(lacking.log_path())?;
        Ok(log.contains(&line).then_some(log))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", lacking.log_tail(40)))?;
    println!(
        "the warning: {}",
        log.lines().find(|l| l.contains(&line)).unwrap_or_default()
    );
    let series = format!("{FORBIDDEN}{{group=\"\",resource=\"events\",verb=\"create\"}}");
    let (_, body) = http_get(&metrics, "/metrics").await?;
    let refused = sample(&body, &series);
    // Each scheduled binding asks for two Events (binding and template): many refusals, one
    // warning a minute.
    assert!(refused >= 4.0, "{series} = {refused}\n{body}");
    // One warning per minute at most, whatever the number of refusals.
    let minutes = started.elapsed().as_secs() / 60;
    let warnings = log.matches(&line).count() as u64;
    assert!(
        (1..=1 + minutes).contains(&warnings),
        "{warnings} warnings in {minutes} whole minutes:\n{log}"
    );
    assert_eq!(
        family_sum(&body, FORBIDDEN),
        refused,
        "only events were refused"
    );
    for name in SCHEDULED {
        let e = events_about(
            &env,
            "default",
            "ResourceBinding",
            &format!("{name}-noevents"),
        )
        .await?;
        assert!(e.is_empty(), "{name}-noevents has events: {e:?}");
    }
    // And the Lease of this release was won all the same.
    let lease = leases.get("karmada-scheduler-noevents").await?;
    assert!(lease.spec.and_then(|s| s.holder_identity).is_some());
    drop(lacking);

    // An older RBAC without EndpointSlices (a namespaced Role, a watch): the estimators of
    // ExternalName Services are still found and asked.
    let mut docs = rbac::chart_rbac(
        &helm,
        Daemon::Scheduler,
        "noslices",
        &["scheduler.leaderElectResourceName=karmada-scheduler-noslices"],
    );
    for verb in ["list", "watch"] {
        rbac::without_verb(&mut docs, "discovery.k8s.io", "endpointslices", verb)?;
    }
    let id = rbac::service_account_kubeconfig(&env, &docs).await?;
    let metrics = format!("127.0.0.1:{}", free_port());
    let noslices = spawn(
        &env,
        "rs-scheduler-noslices",
        &id,
        "karmada-scheduler-noslices",
        &metrics,
    )?;
    schedule_cases(&env, "noslices", &noslices).await?;
    let line = format!(
        "forbidden: \"{}\" may not list resource \"endpointslices\" in API group \"discovery.k8s.io\" in the namespace \"karmada-system\"",
        id.user
    );
    let log = wait_for("the forbidden warning", WAIT, || async {
        let log = std::fs::read_to_string(noslices.log_path())?;
        Ok(log.contains(&line).then_some(log))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", noslices.log_tail(40)))?;
    println!(
        "the warning: {}",
        log.lines().find(|l| l.contains(&line)).unwrap_or_default()
    );
    // The watch retries every few seconds; the warning is the one line about it.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    let log = std::fs::read_to_string(noslices.log_path())?;
    assert_eq!(log.matches(&line).count(), 1, "{log}");
    assert!(!log.contains("watch of endpointslices failed"), "{log}");
    let (_, body) = http_get(&metrics, "/metrics").await?;
    let series = format!(
        "{FORBIDDEN}{{group=\"discovery.k8s.io\",resource=\"endpointslices\",verb=\"list\"}}"
    );
    assert!(sample(&body, &series) >= 1.0, "{series}\n{body}");
    assert_eq!(
        family_sum(&body, FORBIDDEN),
        sample(&body, &series),
        "only the EndpointSlices list was refused:\n{body}"
    );
    env.stop();
    Ok(())
}
