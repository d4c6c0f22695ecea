//! `--whole-karmada-only`: the user's path end to end in one whole Karmada
//! (`hack/karmada-up.sh`), with our scheduler and descheduler and then with Go's, swapped on
//! the running Karmada between rounds. Each round creates the Deployments and policies of
//! `testenv::whole_bench` and waits until every member holds its Deployment with the replicas
//! the binding gives it; reported: Deployments/s, p50/p99 from creation to scheduled and to
//! the members, the steps in between, and each process's CPU during the round.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use testenv::whole::WholeKarmada;
use testenv::whole_bench::{self, Round, Sample};
use tokio::time::Instant;

use crate::procs::cpu_seconds;
use crate::run::log;
use crate::stats::percentile;

/// What the flags ask for.
#[derive(Clone, Debug)]
pub struct WholeFlags {
    pub deployments: usize,
    /// `ours` and `go`, in the order to run.
    pub rounds: Vec<String>,
    pub rate: f64,
    pub concurrency: usize,
    pub timeout: Duration,
    /// A running whole Karmada to use (left running); else one is started and stopped.
    pub state_dir: Option<PathBuf>,
    pub scheduler: PathBuf,
    pub descheduler: PathBuf,
}

/// One round with the CPU each process spent during it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RoundRun {
    pub round: Round,
    /// CPU seconds per process of the whole Karmada, from the first creation to the end.
    pub cpu: BTreeMap<String, f64>,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WholeBench {
    pub date: String,
    pub machine: String,
    pub git_commit: String,
    pub deployments: usize,
    pub rounds: Vec<RoundRun>,
}

fn cpu_now(k: &WholeKarmada) -> BTreeMap<String, f64> {
    k.processes()
        .into_iter()
        .filter_map(|(name, pid)| Some((name, cpu_seconds(pid)?)))
        .collect()
}

/// Runs the rounds.
pub async fn run(f: &WholeFlags) -> anyhow::Result<WholeBench> {
    let t0 = Instant::now();
    for kind in &f.rounds {
        if kind != "ours" && kind != "go" {
            bail!("--whole-rounds: {kind} is neither ours nor go");
        }
    }
    let tools = testenv::Tools::ensure().map_err(|e| anyhow::anyhow!("{e}"))?;
    let k = match &f.state_dir {
        Some(dir) => WholeKarmada::attach(dir, &tools)?,
        None => {
            log(t0, "starting a whole Karmada (hack/karmada-up.sh)");
            tokio::task::block_in_place(|| {
                WholeKarmada::start("whole-bench", &tools, &f.scheduler, &f.descheduler)
            })?
            .context("the Go binaries of hack/karmada-up.sh are not built")?
        }
    };
    log(t0, format!("whole Karmada in {}", k.state_dir().display()));
    whole_bench::ensure_namespace(&k).await?;
    let items = whole_bench::mix(f.deployments);
    let mut rounds = Vec::new();
    for kind in &f.rounds {
        if k.scheduler_kind()? != *kind {
            log(
                t0,
                format!("swapping in the {kind} scheduler and descheduler"),
            );
            tokio::task::block_in_place(|| k.set_scheduler(kind, &f.scheduler, &f.descheduler))?;
        }
        whole_bench::clear(&k, f.timeout).await?;
        // A quiet start: the new scheduler's caches filled, the last round's deletions
        // through the members, the Clusters' status written again.
        tokio::time::sleep(Duration::from_secs(15)).await;
        log(
            t0,
            format!(
                "round {}: {} Deployments, {kind}",
                rounds.len() + 1,
                items.len()
            ),
        );
        let before = cpu_now(&k);
        let round =
            whole_bench::run_round(&k, kind, &items, f.rate, f.concurrency, f.timeout).await?;
        let after = cpu_now(&k);
        let cpu = after
            .iter()
            .filter_map(|(n, a)| Some((n.clone(), a - before.get(n)?)))
            .collect();
        log(
            t0,
            format!(
                "round {}: {}/{} on their members in {:.1}s ({:.2} Deployments/s)",
                rounds.len() + 1,
                round.complete,
                round.deployments,
                round.seconds,
                throughput(&round)
            ),
        );
        rounds.push(RoundRun { round, cpu });
    }
    whole_bench::clear(&k, f.timeout).await?;
    Ok(WholeBench {
        deployments: f.deployments,
        rounds,
        ..Default::default()
    })
}

/// Deployments on their members per second, from the first creation to the last arrival.
fn throughput(r: &Round) -> f64 {
    if r.seconds > 0.0 {
        r.complete as f64 / r.seconds
    } else {
        0.0
    }
}

/// One step of the path: its name and how to read it off a sample.
type Step = (&'static str, fn(&Sample) -> Option<f64>);

fn diff(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(b? - a?)
}

/// The totals, then the steps between them (which add up per Deployment, not per percentile).
const STEPS: &[Step] = &[
    ("creation → `spec.clusters` set (scheduled)", |s| {
        diff(Some(s.applied), s.placed)
    }),
    ("creation → `Scheduled=True`", |s| {
        diff(Some(s.applied), s.scheduled)
    }),
    ("creation → on the members", |s| {
        diff(Some(s.applied), s.on_members)
    }),
    (
        "1. creation → binding (controller-manager: detector)",
        |s| diff(Some(s.applied), s.binding),
    ),
    ("2. binding → `spec.clusters` (scheduler)", |s| {
        diff(s.binding, s.placed)
    }),
    (
        "3. `spec.clusters` → Works (controller-manager: binding controller)",
        |s| diff(s.placed, s.works),
    ),
    (
        "4. Works → on the members (execution controller / agent)",
        |s| diff(s.works, s.on_members),
    ),
    (
        "`spec.clusters` → `Scheduled=True` (the scheduler's status write)",
        |s| diff(s.placed, s.scheduled),
    ),
    (
        "server stamps: creation → binding `creationTimestamp`",
        |s| s.binding_server,
    ),
    (
        "server stamps: creation → `Scheduled` `lastTransitionTime`",
        |s| s.scheduled_server,
    ),
];

fn pooled<'a>(b: &'a WholeBench, kind: &str) -> Vec<&'a Sample> {
    b.rounds
        .iter()
        .filter(|r| r.round.scheduler == kind)
        .flat_map(|r| r.round.samples.iter())
        .collect()
}

fn quantile(samples: &[&Sample], step: fn(&Sample) -> Option<f64>, q: f64) -> Option<f64> {
    let v: Vec<f64> = samples.iter().filter_map(|s| step(s)).collect();
    percentile(&v, q)
}

fn secs(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.2}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.abs() > 1e-9 => format!("{:.2}", a / b),
        _ => "–".into(),
    }
}

fn who(kind: &str) -> &str {
    if kind == "go" { "Go v1.18.2" } else { "ours" }
}

fn mean_throughput(b: &WholeBench, kind: &str) -> Option<f64> {
    let v: Vec<f64> = b
        .rounds
        .iter()
        .filter(|r| r.round.scheduler == kind)
        .map(|r| throughput(&r.round))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The Markdown report.
pub fn markdown(b: &WholeBench) -> String {
    let first = b.rounds.first().map(|r| &r.round);
    let mut out = format!(
        "# End to end in a whole Karmada: {} Deployments, ours and Go's scheduler\n\n\
         {} · {} · commit {}\n\n\
         One whole Karmada v1.18.2 (`hack/karmada-up.sh`: controller-manager, webhook, \
         aggregated API server, three kwok members with a Go estimator each); per round the \
         scheduler and descheduler named, swapped on the running Karmada between rounds, and \
         the last round's objects deleted and gone from the members first. A round creates \
         {} Deployments with a PropagationPolicy each (a third each: Divided by the estimators' \
         available replicas, Divided by static weights 2:1:1, Duplicated), {}, and waits until \
         every member named by each binding's `spec.clusters` holds the Deployment with the \
         replicas given it. Times are the bench's own, taken as its watch events arrive \
         (ResourceBindings and Works on Karmada, Deployments on each member), from just \
         before the Deployment's POST (its policy was created just before); the two \
         *server stamps* rows use the binding's `creationTimestamp` and the condition's \
         `lastTransitionTime` instead (one-second resolution, so ±1 s).\n\n",
        b.deployments,
        b.date,
        b.machine,
        b.git_commit,
        b.deployments,
        match first {
            Some(r) if r.rate > 0.0 => format!("{} a second", r.rate),
            Some(r) => format!("as fast as {} creations in flight allow", r.concurrency),
            None => String::new(),
        },
    );
    out.push_str(
        "| round | scheduler | on their members | creations took (s) | first creation → last \
         on its members (s) | Deployments/s |\n| ---: | --- | ---: | ---: | ---: | ---: |\n",
    );
    for (i, r) in b.rounds.iter().enumerate() {
        let r = &r.round;
        out.push_str(&format!(
            "| {} | {} | {}/{} | {:.1} | {:.1} | {:.2} |\n",
            i + 1,
            who(&r.scheduler),
            r.complete,
            r.deployments,
            r.apply_seconds,
            r.seconds,
            throughput(r)
        ));
    }
    let (ours, go) = (pooled(b, "ours"), pooled(b, "go"));
    let (to, tg) = (mean_throughput(b, "ours"), mean_throughput(b, "go"));
    out.push_str(&format!(
        "\nDeployments/s, ours/Go: **{}** (above 1: ours faster).\n\n\
         Seconds per Deployment (all rounds of a scheduler pooled; ours/Go below 1: ours \
         faster). The numbered steps add up per Deployment, not per percentile.\n\n\
         | step | ours p50 | Go p50 | ours/Go | ours p99 | Go p99 | ours/Go |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        ratio(to, tg)
    ));
    for (name, step) in STEPS {
        let (o50, g50) = (quantile(&ours, *step, 0.5), quantile(&go, *step, 0.5));
        let (o99, g99) = (quantile(&ours, *step, 0.99), quantile(&go, *step, 0.99));
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {} |\n",
            secs(o50),
            secs(g50),
            ratio(o50, g50),
            secs(o99),
            secs(g99),
            ratio(o99, g99)
        ));
    }
    out.push_str(
        "\nCPU seconds per process from a round's first creation to its end (processes \
         above 1 s in some round):\n\n",
    );
    let mut names: Vec<&String> = b
        .rounds
        .iter()
        .flat_map(|r| r.cpu.iter().filter(|(_, s)| **s >= 1.0).map(|(n, _)| n))
        .collect();
    names.sort();
    names.dedup();
    let total = |r: &RoundRun| r.cpu.values().sum::<f64>();
    let over_rounds = |n: &String| -> f64 {
        b.rounds
            .iter()
            .map(|r| r.cpu.get(n).copied().unwrap_or(0.0))
            .sum()
    };
    names.sort_by(|x, y| over_rounds(y).total_cmp(&over_rounds(x)));
    out.push_str("| process |");
    for (i, r) in b.rounds.iter().enumerate() {
        out.push_str(&format!(" {} ({}) |", i + 1, who(&r.round.scheduler)));
    }
    out.push_str("\n| --- |");
    out.push_str(&" ---: |".repeat(b.rounds.len()));
    out.push('\n');
    for n in names {
        out.push_str(&format!("| {n} |"));
        for r in &b.rounds {
            out.push_str(&format!(" {:.1} |", r.cpu.get(n).copied().unwrap_or(0.0)));
        }
        out.push('\n');
    }
    out.push_str("| all |");
    for r in &b.rounds {
        out.push_str(&format!(" {:.1} |", total(r)));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(applied: f64, binding: f64, placed: f64, works: f64, on: f64) -> Sample {
        Sample {
            applied,
            binding: Some(binding),
            placed: Some(placed),
            scheduled: Some(placed + 0.01),
            works: Some(works),
            on_members: Some(on),
            ..Default::default()
        }
    }

    #[test]
    fn steps_add_up_to_the_total_and_ratios_compare_the_kinds() {
        let s = sample(1.0, 1.5, 1.75, 2.0, 3.0);
        let total = STEPS[2].1(&s).unwrap();
        let parts: f64 = STEPS[3..7].iter().map(|(_, f)| f(&s).unwrap()).sum();
        assert!((total - 2.0).abs() < 1e-9 && (parts - total).abs() < 1e-9);
        let round = |kind: &str, on: f64| RoundRun {
            round: Round {
                scheduler: kind.into(),
                deployments: 1,
                complete: 1,
                seconds: on,
                samples: vec![sample(0.0, 0.1, 0.2, 0.3, on)],
                ..Default::default()
            },
            cpu: BTreeMap::from([("karmada-scheduler".to_string(), 2.0)]),
        };
        let b = WholeBench {
            deployments: 1,
            rounds: vec![round("ours", 1.0), round("go", 4.0)],
            ..Default::default()
        };
        let md = markdown(&b);
        assert!(md.contains("Deployments/s, ours/Go: **4.00**"), "{md}");
        assert!(
            md.contains("| creation → on the members | 1.00 | 4.00 | 0.25 |"),
            "{md}"
        );
    }
}
