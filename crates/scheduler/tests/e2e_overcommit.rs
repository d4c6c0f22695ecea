//! `SchedulingOvercommitProtection` end to end, on the local control plane whose member
//! estimators are the real Go karmada-scheduler-estimator v1.18.2 with the gate on: a burst of
//! Divided bindings whose total demand is twice what the member clusters' nodes hold, for our
//! scheduler with 1 and 16 workers and for the Go scheduler v1.18.2, gate off and on. Counted:
//! replicas placed beyond what each cluster's nodes hold (see `testenv::overcommit`).
//!
//! With the gate on, ours places nothing beyond the room at 16 workers; with it off, ours
//! overcommits no more than the reference does.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

use std::path::Path;
use std::time::Duration;

use testenv::overcommit::{BurstResult, GATE, run, standard_runs};
use testenv::{TestEnv, tools_or_skip};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_keeps_a_burst_within_the_clusters_room() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("the_gate_keeps_a_burst_within_the_clusters_room") else {
        return Ok(());
    };
    let go = tools.bin("karmada-scheduler");
    let env = TestEnv::builder()
        .tools(tools)
        .members(2)
        .estimator_args(&[GATE])
        .start()
        .await?;
    let room: i64 = testenv::overcommit::room(&env).await?.values().sum();
    assert!(room > 0, "the members have room");
    // Twice the room, in bindings of 2 replicas.
    let bindings = usize::try_from(room).unwrap_or(1).max(1);
    let ours = Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")).to_path_buf();
    let mut results: Vec<BurstResult> = Vec::new();
    for burst in standard_runs(&ours, &go, bindings) {
        let r = run(&env, &burst, Duration::from_secs(180)).await?;
        eprintln!(
            "{}: placed {:?} of room {:?}: {} overcommitted; {} scheduled, {} unschedulable, {:.1}s",
            r.tag, r.placed, r.room, r.overcommitted, r.scheduled, r.unschedulable, r.seconds
        );
        results.push(r);
    }
    let over = |tag: &str| {
        results
            .iter()
            .find(|r| r.tag == tag)
            .map(|r| r.overcommitted)
            .unwrap_or(i64::MAX)
    };
    // The gate on: nothing beyond the room, also with 16 cycles at once, as the reference.
    assert_eq!(over("go-on"), 0, "the reference with the gate");
    assert_eq!(over("rs-1-on"), 0, "ours, one worker");
    assert_eq!(over("rs-16-on"), 0, "ours, 16 workers");
    // Every replica of room is used, so the protection is not just refusing everything.
    for tag in ["rs-1-on", "rs-16-on", "go-on"] {
        let r = results.iter().find(|r| r.tag == tag).expect("ran");
        let placed: i64 = r.placed.values().sum();
        assert_eq!(placed, room, "{tag} fills the room exactly");
    }
    // The gate off: the burst overcommits, and ours (at the default 16 workers) no more than
    // the reference does.
    assert!(over("go-off") > 0, "without the gate the burst overcommits");
    assert!(over("rs-16-off") <= over("go-off"));
    assert!(over("rs-1-off") <= over("go-off"));
    env.stop();
    Ok(())
}
