//! `faults`: bindings lost to failures, ours vs Go, in one run: the fault suite's scenario
//! (`testenv::faults`, also run by `crates/scheduler/tests/e2e_faults.rs`) against each
//! scheduler in turn on the same control plane; the figure that matters is the bindings left
//! incomplete a minute after the last fault (`templates/faults.md`).

use std::time::Duration;

use tokio::time::Instant;

use serde::{Deserialize, Serialize};
use testenv::faults::{FaultConfig, FaultReport, SchedulerUnderTest};

use crate::figures::{fill_stamped, side_rows, table};
use crate::plane::log;
use crate::scenario::Scenario;

/// The scenario's size: bindings in a stream of this long, API server kills and pauses.
const BINDINGS: usize = 100;
const STREAM: Duration = Duration::from_secs(60);
const KILLS: usize = 10;
const PAUSES: usize = 2;

/// One scheduler's side of the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FaultSide {
    pub stuck: Vec<String>,
    pub half_written_at_kill: Vec<String>,
    pub simulate_mismatches: Vec<String>,
    pub double_placements: Vec<String>,
    pub exits: Vec<String>,
    /// Seconds from the last fault until every binding was complete.
    pub recovered_after_s: Option<f64>,
    pub cut_mid_request: u64,
    pub dropped_responses: u64,
    pub apiserver_kills: usize,
    pub apiserver_pauses: usize,
}

impl From<FaultReport> for FaultSide {
    fn from(r: FaultReport) -> Self {
        Self {
            stuck: r.stuck,
            half_written_at_kill: r.half_written_at_kill,
            simulate_mismatches: r.simulate_mismatches,
            double_placements: r.double_placements,
            exits: r.exits,
            recovered_after_s: r.recovered_after.map(|d| d.as_secs_f64()),
            cut_mid_request: r.proxy.cut_mid_request,
            dropped_responses: r.proxy.dropped_responses,
            apiserver_kills: r.apiserver_kills,
            apiserver_pauses: r.apiserver_pauses,
        }
    }
}

/// A whole fault run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FaultBench {
    pub seed: u64,
    pub bindings: usize,
    pub kills: usize,
    pub pauses: usize,
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
    pub rust: FaultSide,
    pub go: FaultSide,
}

pub async fn run(flags: &Scenario) -> anyhow::Result<FaultBench> {
    let t0 = Instant::now();
    crate::plane::ensure_built(&flags.bins.scheduler, "karmada-scheduler")?;
    let env = crate::plane::start_env(t0, |b| b.members(2)).await?;
    let go_bin = crate::plane::go_scheduler(flags, &env);
    let cfg = FaultConfig {
        seed: flags.workload.seed,
        bindings: BINDINGS,
        stream: STREAM,
        apiserver_kills: KILLS,
        apiserver_pauses: PAUSES,
        proxy_chaos: true,
        kill_scheduler: true,
        settle: Duration::from_secs(60),
        simulate_bin: flags.bins.scheduler.clone(),
    };
    let mut sides = Vec::new();
    // Side by side with the Go v1.18.2 scheduler: ours with v1.18.2's queue.
    let as_go = testenv::AS_V1_18_2.iter().map(|s| s.to_string()).collect();
    for (tag, program, extra_args) in [
        ("rust", flags.bins.scheduler.clone(), as_go),
        ("go", go_bin, Vec::new()),
    ] {
        log!(t0, "fault scenario against the {tag} scheduler");
        let under_test = SchedulerUnderTest {
            tag: tag.into(),
            program,
            extra_args,
        };
        let report = testenv::faults::run(&env, &cfg, under_test).await?;
        println!("{}", report.summary());
        sides.push(FaultSide::from(report));
    }
    env.stop();
    let [rust, go] = crate::plane::two(sides);
    Ok(FaultBench {
        seed: flags.workload.seed,
        bindings: BINDINGS,
        kills: KILLS,
        pauses: PAUSES,
        rust,
        go,
        ..Default::default()
    })
}

/// The report: the figures, then what each side left stuck.
pub fn markdown(b: &FaultBench) -> String {
    let (o, g) = (&b.rust, &b.go);
    // Counts; the proxy's and the half-written one say how hostile the run was, the others
    // are better lower.
    let n = |n: usize| Some(n as f64);
    let stuck = format!("bindings stuck after {} API server kills", b.kills);
    let rows = side_rows!(o, g;
        stuck, |s| n(s.stuck.len()), 0, Lower;
        "half-written when the scheduler was killed", |s| n(s.half_written_at_kill.len()), 0, Neither;
        "placements other than simulate's", |s| n(s.simulate_mismatches.len()), 0, Lower;
        "generations written with two placements", |s| n(s.double_placements.len()), 0, Lower;
        "scheduler exits", |s| n(s.exits.len()), 0, Lower;
        "all complete after the last fault (s)", |s| s.recovered_after_s, 1, Lower;
        "connections the proxy cut", |s| Some(s.cut_mid_request as f64), 0, Neither;
        "responses the proxy dropped", |s| Some(s.dropped_responses as f64), 0, Neither;
    );
    let mut stuck = String::new();
    for (name, side) in [("our", o), ("the Go", g)] {
        if !side.stuck.is_empty() {
            stuck += &format!("\n## Stuck with {name} scheduler\n\n");
            stuck += &side
                .stuck
                .iter()
                .map(|s| format!("- {s}\n"))
                .collect::<String>();
        }
    }
    fill_stamped(
        include_str!("../templates/faults.md"),
        &b.stamp,
        &[
            ("bindings", b.bindings.to_string()),
            ("kills", b.kills.to_string()),
            ("pauses", b.pauses.to_string()),
            ("seed", b.seed.to_string()),
            ("figures", table(&rows)),
            ("stuck", stuck),
        ],
    )
}
