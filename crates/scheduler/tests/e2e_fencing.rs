//! Fencing end to end: two replicas share one Lease; the leader is frozen (SIGSTOP) and cut
//! from the API server for longer than the lease at seeded moments while bindings arrive and
//! are scaled (crates/testenv `fencing`). Afterwards every binding must be current and, by the
//! API server's audit log, no replica of ours may have written a binding, its status or an
//! Event outside its lease.
//!
//! Two pairs run on one control plane: ours + ours, and ours + the Go karmada-scheduler
//! v1.18.2 (which ends its process when a renewal fails; restarted as a supervisor would).
//! Go's figures are printed beside ours, not judged.
//!
//! `FENCING_SEED=<n>` replays another seed; `FENCING_GO=0` skips the mixed pair.
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use testenv::fencing::{FencingConfig, FencingReport, Replica};
use testenv::{TestEnv, tools_or_skip};

use common::*;

async fn run(
    env: &TestEnv,
    cfg: &FencingConfig,
    pair: [Replica; 2],
) -> anyhow::Result<FencingReport> {
    tokio::time::timeout(
        Duration::from_secs(420),
        testenv::fencing::run(env, cfg, pair),
    )
    .await
    .map_err(|_| {
        anyhow::anyhow!(
            "the {} fencing scenario did not end within 7 minutes",
            cfg.pair
        )
    })?
}

fn ours(tag: &str) -> Replica {
    Replica {
        tag: tag.into(),
        program: PathBuf::from(env!("CARGO_BIN_EXE_karmada-scheduler")),
        extra_args: Vec::new(),
    }
}

/// What ours must show in a report: nothing stuck or different, no stale write sent.
fn judge(report: &FencingReport, replicas: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    if !report.stuck.is_empty() {
        failures.push(format!("stuck: {:?}", report.stuck));
    }
    if !report.simulate_mismatches.is_empty() {
        failures.push(format!("not simulate's: {:?}", report.simulate_mismatches));
    }
    if !report.double_placements.is_empty() {
        failures.push(format!("two placements: {:?}", report.double_placements));
    }
    for r in replicas {
        let sent = report.sent_outside_lease(r);
        if !sent.is_empty() {
            failures.push(format!("{r} wrote outside its lease: {sent:#?}"));
        }
        if let Some(exits) = report.exits.get(*r) {
            failures.push(format!("{r} exited: {exits:?}"));
        }
        // client-go's default agent, as the reference's binaries send it.
        let agents = report.user_agents.get(*r).cloned().unwrap_or_default();
        let go_like = |a: &String| {
            a.starts_with("karmada-scheduler/v0.0.0 (linux/") && a.ends_with(") kubernetes/$Format")
        };
        if agents.is_empty() || !agents.iter().all(go_like) {
            failures.push(format!("{r}: User-Agents {agents:?}, not the reference's"));
        }
        if report.writes.get(*r).copied().unwrap_or(0) == 0 && report.leader_changes == 0 {
            failures.push(format!("{r}: no writes at all (the scenario did not run)"));
        }
    }
    if !report.faults.iter().any(|f| f.starts_with("froze")) {
        failures.push(format!("no freeze happened: {:?}", report.faults));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_replica_writes_after_its_lease_lapsed() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("no_replica_writes_after_its_lease_lapsed") else {
        return Ok(());
    };
    let seed = std::env::var("FENCING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261201);
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let cfg = FencingConfig {
        seed,
        pair: "ours".into(),
        bindings: 40,
        stream: Duration::from_secs(36),
        freezes: 2,
        cuts: 1,
        settle: Duration::from_secs(60),
        simulate_bin: PathBuf::from(env!("CARGO_BIN_EXE_karmada-scheduler")),
    };
    let report = run(&env, &cfg, [ours("rs-a"), ours("rs-b")]).await?;
    println!("{}", report.summary());
    let mut failures = judge(&report, &["rs-a", "rs-b"]);

    if std::env::var("FENCING_GO").as_deref() != Ok("0") {
        let mixed = FencingConfig {
            pair: "ours-go".into(),
            ..cfg.clone()
        };
        let go = Replica {
            tag: "go".into(),
            program: env.tools().bin("karmada-scheduler"),
            extra_args: Vec::new(),
        };
        // Sharing a Lease with the Go v1.18.2 scheduler: ours decides as v1.18.2 does.
        let mut rs = ours("rs");
        rs.extra_args = testenv::AS_V1_18_2.iter().map(|s| s.to_string()).collect();
        let report = run(&env, &mixed, [rs, go]).await?;
        println!("{}", report.summary());
        failures.extend(judge(&report, &["rs"]));
    }
    assert!(failures.is_empty(), "{failures:#?}");
    Ok(())
}

/// What a stale writer elsewhere leaves (a replica that woke after its lease, an older
/// version): the observed generation moved back under an unchanged generation, the binding
/// still marked scheduled. The reference queues only on generation changes and leaves it so;
/// ours queues it and completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_moved_back_by_a_stale_writer_is_completed() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("a_status_moved_back_by_a_stale_writer_is_completed") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(1).start().await?;
    let rbs = rb_api(&env).await?;
    let sched = OurScheduler::start(&env, &[]).await?;
    let placement = json!({"clusterAffinity": {"clusterNames": ["member1"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided",
                              "replicaDivisionPreference": "Aggregated"}});
    let obj: kube::api::DynamicObject =
        serde_json::from_value(binding("stale-status", 2, placement, "default-scheduler"))?;
    rbs.create(&PostParams::default(), &obj).await?;
    wait_generation_observed(&rbs, "stale-status")
        .await
        .map_err(|e| sched.explain(e))?;
    patch_spec(&rbs, "stale-status", json!({"replicas": 4})).await?;
    let scaled = wait_generation_observed(&rbs, "stale-status")
        .await
        .map_err(|e| sched.explain(e))?;
    let generation = scaled.metadata.generation.unwrap_or_default();
    assert_eq!(
        clusters_of(&scaled),
        json!([{"name": "member1", "replicas": 4}])
    );
    // The stale writer: the status of an older decision.
    rbs.patch_status(
        "stale-status",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"schedulerObservedGeneration": generation - 2}})),
    )
    .await?;
    let repaired = wait_generation_observed(&rbs, "stale-status")
        .await
        .map_err(|e| sched.explain(e))?;
    assert_eq!(repaired.metadata.generation, Some(generation));
    assert_eq!(
        clusters_of(&repaired),
        json!([{"name": "member1", "replicas": 4}])
    );
    sched.shutdown().await
}
