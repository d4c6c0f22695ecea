//! `overcommit`: the overcommit burst of `testenv::overcommit` (also run by
//! `crates/scheduler/tests/e2e_overcommit.rs`) for ours at 1 and 16 workers and for the Go
//! scheduler, `SchedulingOvercommitProtection` off and on, on one control plane whose Go
//! estimators run with the gate. Reported: replicas placed beyond what the clusters' nodes
//! hold, per run.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use testenv::overcommit::{BurstResult, GATE, room, run as run_burst, standard_runs};
use tokio::time::Instant;

use crate::figures::fill_stamped;
use crate::plane::log;
use crate::scenario::Scenario;

/// Bindings per burst as a multiple of the room (in bindings of 2 replicas).
const DEMAND_FACTOR: usize = 2;

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OvercommitBench {
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
    pub members: usize,
    pub bindings: usize,
    pub room: i64,
    pub runs: Vec<BurstResult>,
}

/// Runs the six bursts.
pub async fn run(flags: &Scenario) -> anyhow::Result<OvercommitBench> {
    let t0 = Instant::now();
    let env = crate::plane::start_env(t0, |b| {
        b.members(flags.estimators.members).estimator_args(&[GATE])
    })
    .await?;
    let go = crate::plane::go_scheduler(flags, &env);
    let room: i64 = room(&env).await?.values().sum();
    let bindings = usize::try_from(room).unwrap_or(1).max(1) * DEMAND_FACTOR / 2;
    log!(
        t0,
        "room for {room} replicas; bursts of {bindings} bindings × 2"
    );
    let mut runs = Vec::new();
    for burst in standard_runs(&flags.bins.scheduler, &go, bindings) {
        let r = run_burst(&env, &burst, Duration::from_secs(600)).await?;
        log!(
            t0,
            "{}: {} overcommitted, {} scheduled, {} unschedulable, {:.1}s",
            r.tag,
            r.overcommitted,
            r.scheduled,
            r.unschedulable,
            r.seconds
        );
        runs.push(r);
    }
    env.stop();
    Ok(OvercommitBench {
        members: flags.estimators.members,
        bindings,
        room,
        runs,
        ..Default::default()
    })
}

/// The Markdown report: one row a burst (ours has two worker counts, so no ours-vs-Go rows).
pub fn markdown(b: &OvercommitBench) -> String {
    let runs = b.runs.iter().map(|r| {
        let parts: Vec<&str> = r.tag.split('-').collect();
        let (who, workers, gate) = match parts.as_slice() {
            ["rs", w, g] => ("ours", *w, *g),
            ["go", g] => ("Go v1.18.2", "1", *g),
            _ => (r.tag.as_str(), "", ""),
        };
        format!(
            "| {who} | {workers} | {gate} | {} | {} | {} | {:.1} |\n",
            r.overcommitted, r.scheduled, r.unschedulable, r.seconds
        )
    });
    fill_stamped(
        include_str!("../templates/overcommit.md"),
        &b.stamp,
        &[
            ("bindings", b.bindings.to_string()),
            ("room", b.room.to_string()),
            ("members", b.members.to_string()),
            ("runs", runs.collect()),
        ],
    )
}
