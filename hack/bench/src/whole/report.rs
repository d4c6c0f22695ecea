//! The whole-Karmada bench's report: each kind's rounds, the steps of the path from creation
//! to the members, CPU by process, and the controller-manager's work per round.

use std::collections::BTreeSet;

use super::driver::{Round, Sample};

use super::{RoundRun, WholeBench, throughput};
use crate::figures::{Row, fill_stamped, table};
use crate::stats::percentile;

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
        |s| s.by_server(s.binding_created_unix),
    ),
    (
        "server stamps: creation → `Scheduled` `lastTransitionTime`",
        |s| s.by_server(s.scheduled_unix),
    ),
    (
        "server stamps: binding `creationTimestamp` → `lastTransitionTime`",
        |s| diff(s.binding_created_unix, s.scheduled_unix),
    ),
];

/// The rounds of scheduler `kind`.
fn rounds_of<'a>(b: &'a WholeBench, kind: &'a str) -> impl Iterator<Item = &'a Round> {
    b.rounds
        .iter()
        .map(|r| &r.round)
        .filter(move |r| r.scheduler == kind)
}

fn pooled<'a>(b: &'a WholeBench, kind: &'a str) -> Vec<&'a Sample> {
    rounds_of(b, kind).flat_map(|r| &r.samples).collect()
}

fn quantile(samples: &[&Sample], step: fn(&Sample) -> Option<f64>, q: f64) -> Option<f64> {
    let v: Vec<f64> = samples.iter().filter_map(|s| step(s)).collect();
    percentile(&v, q)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => format!("{:.2}", a / b),
        _ => "–".into(),
    }
}

fn who(kind: &str) -> &str {
    if kind == "go" { "Go v1.18.2" } else { "ours" }
}

fn mean_throughput(b: &WholeBench, kind: &str) -> Option<f64> {
    let v: Vec<f64> = rounds_of(b, kind).map(throughput).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The Markdown report.
pub fn markdown(b: &WholeBench) -> String {
    let pace = match b.rounds.first().map(|r| &r.round) {
        Some(r) if r.rate > 0.0 => format!("{} a second", r.rate),
        Some(r) => format!("as fast as {} creations in flight allow", r.concurrency),
        None => String::new(),
    };
    let rounds = b.rounds.iter().enumerate().map(|(i, rr)| {
        let r = &rr.round;
        let n = r.deployments.max(1) as f64;
        let versions: u64 = r.samples.iter().map(|s| s.binding_versions).sum();
        let requests: f64 = rr.controller_manager.karmada_requests.values().sum();
        format!(
            "| {} | {} | {}/{} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} |\n",
            i + 1,
            who(&r.scheduler),
            r.complete,
            r.deployments,
            r.apply_seconds,
            r.seconds,
            throughput(r),
            versions as f64 / n,
            requests / n,
            rr.load_before
        )
    });
    let (ours, go) = (pooled(b, "ours"), pooled(b, "go"));
    let steps: Vec<Row> = (STEPS.iter())
        .flat_map(|(name, step)| {
            [("p50", 0.5), ("p99", 0.99)].map(|(p, q)| {
                let (o, g) = (quantile(&ours, *step, q), quantile(&go, *step, q));
                Row::new(format!("{name}, {p} (s)"), o, g, 2).lower()
            })
        })
        .collect();
    let (to, tg) = (mean_throughput(b, "ours"), mean_throughput(b, "go"));
    let mut flags: Vec<String> = (b.rounds.iter())
        .map(|r| match r.controller_manager.flags.as_slice() {
            [] => "defaults".to_string(),
            f => f.join(" "),
        })
        .collect();
    flags.dedup();
    fill_stamped(
        include_str!("../../templates/whole.md"),
        &b.stamp,
        &[
            ("deployments", b.deployments.to_string()),
            ("pace", pace),
            ("rounds", rounds.collect()),
            ("throughput", ratio(to, tg)),
            ("steps", table(&steps)),
            ("flags", flags.join(" / ")),
            ("queues", queues(b)),
            ("cpu", cpu_table(b)),
        ],
    )
}

/// CPU seconds per process and round: the schedulers and the processes above 1 s in some
/// round, then the sum over every process of the round.
fn cpu_table(b: &WholeBench) -> String {
    let names: BTreeSet<&str> = (b.rounds.iter().flat_map(|r| r.cpu.iter()))
        .filter(|(n, s)| {
            **s >= 1.0 || matches!(n.as_str(), "karmada-scheduler" | "karmada-descheduler")
        })
        .map(|(n, _)| n.as_str())
        .collect();
    let over_rounds = |n: &str| -> f64 { b.rounds.iter().map(|r| cpu(r, n)).sum() };
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_by(|x, y| over_rounds(y).total_cmp(&over_rounds(x)));
    let mut rows: Vec<(&str, Option<&str>)> = names.into_iter().map(|n| (n, Some(n))).collect();
    rows.push(("all", None));
    per_round(b, "process", &rows, |r, n| {
        let seconds = n.map_or_else(|| r.cpu.values().sum::<f64>(), |n| cpu(r, n));
        format!("{seconds:.1}")
    })
}

/// CPU seconds of process `n` in a round.
fn cpu(r: &RoundRun, n: &str) -> f64 {
    r.cpu.get(n).copied().unwrap_or(0.0)
}

/// A table with a column per round: a row per `(label, key)`, its cell in a round given by
/// `cell` from the key.
fn per_round<K>(
    b: &WholeBench,
    first: &str,
    rows: &[(&str, K)],
    cell: impl Fn(&RoundRun, &K) -> String,
) -> String {
    let mut out = format!("| {first} |");
    for (i, r) in b.rounds.iter().enumerate() {
        out.push_str(&format!(" {} ({}) |", i + 1, who(&r.round.scheduler)));
    }
    out.push_str("\n| --- |");
    out.push_str(&" ---: |".repeat(b.rounds.len()));
    out.push('\n');
    for (label, key) in rows {
        out.push_str(&format!("| {label} |"));
        for r in &b.rounds {
            out.push_str(&format!(" {} |", cell(r, key)));
        }
        out.push('\n');
    }
    out
}

/// The controller-manager's queues with at least a quarter as many items as Deployments,
/// per round: items, mean wait in the queue, mean work.
fn queues(b: &WholeBench) -> String {
    let names: BTreeSet<&str> = (b.rounds.iter())
        .flat_map(|r| {
            let queues = r.controller_manager.queues.iter();
            queues.filter(|(_, q)| q.items * 4.0 >= r.round.deployments as f64)
        })
        .map(|(n, _)| n.as_str())
        .collect();
    let rows: Vec<(&str, &str)> = names.into_iter().map(|n| (n, n)).collect();
    per_round(b, "queue", &rows, |r, n| {
        match r.controller_manager.queues.get(*n) {
            Some(q) if q.items > 0.0 => {
                let (waited, worked) = (q.waited / q.items, q.worked / q.items);
                format!("{:.0} · {waited:.2} · {worked:.2}", q.items)
            }
            _ => "–".into(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whole::CmWork;
    use std::collections::BTreeMap;

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
            controller_manager: CmWork::default(),
            load_before: 0.0,
        };
        let b = WholeBench {
            deployments: 1,
            rounds: vec![round("ours", 1.0), round("go", 4.0)],
            ..Default::default()
        };
        let md = markdown(&b);
        assert!(md.contains("Deployments/s, ours/Go: **4.00**"), "{md}");
        assert!(
            md.contains("| creation → on the members, p50 (s) | 1.00 | 4.00 | 4.00× |"),
            "{md}"
        );
    }
}
