//! The churn bench's report and chart: each figure's growth after warm-up, the samples over
//! time, and the state of every live binding and pair at the end.

use super::{ChurnRun, ChurnSample, ChurnSide, FIGURES, Figure, IN_FLIGHT, TEMPLATES};
use super::{ESTIMATOR_CONNECTED, GOROUTINES, TOKIO_TASKS};
use crate::chart::{Axis, GO, Line, Panel, RUST, linear_step, timeseries};
use crate::figures::num;
use crate::stats;

/// The samples' `(seconds, value)` points of one figure of side `i`.
fn series(samples: &[ChurnSample], f: &Figure, i: usize) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| (f.3)(s, i).map(|v| (s.t_s, v)))
        .collect()
}

/// Growth figures of one series.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Growth {
    pub first: Option<f64>,
    /// First point of the second half.
    pub mid: Option<f64>,
    pub last: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    /// Least-squares slope per minute over the second half, and over the whole run.
    pub per_min_second_half: Option<f64>,
    pub per_min_whole: Option<f64>,
}

impl Growth {
    pub fn of(points: &[(f64, f64)], stream_s: f64) -> Growth {
        // After the warm-up.
        let half: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|p| p.0 >= stream_s / 2.0)
            .collect();
        let n = points.len() as f64;
        Growth {
            first: points.first().map(|p| p.1),
            mid: half.first().map(|p| p.1),
            last: points.last().map(|p| p.1),
            max: points.iter().map(|p| p.1).reduce(f64::max),
            mean: (!points.is_empty()).then(|| points.iter().map(|p| p.1).sum::<f64>() / n),
            per_min_second_half: stats::slope_per_minute(&half),
            per_min_whole: stats::slope_per_minute(points),
        }
    }
}

/// Figures (indices into [`FIGURES`]) of the chart's panels, left to right, top to bottom.
const PANELS: [usize; 6] = [0, 1, 4, 6, 3, 5];

/// A row of the growth table: label, value, decimals (`None`: the figure's own).
type GrowthRow = (&'static str, fn(&Growth) -> Option<f64>, Option<usize>);

const GROWTH_ROWS: [GrowthRow; 7] = [
    ("first sample", |g| g.first, None),
    ("start of the second half", |g| g.mid, None),
    ("last sample", |g| g.last, None),
    ("max", |g| g.max, None),
    ("mean", |g| g.mean, Some(1)),
    (
        "per minute, second half",
        |g| g.per_min_second_half,
        Some(3),
    ),
    ("per minute, whole run", |g| g.per_min_whole, Some(3)),
];

/// Draws the chart; returns each panel's axis and the time gridline step (seconds).
pub fn chart(path: &std::path::Path, r: &ChurnRun) -> anyhow::Result<(Vec<Axis>, f64)> {
    // Ours wider, under Go's: where they are equal, an orange rim around blue.
    let line = |k: usize, i: usize| Line {
        color: [RUST, GO][i],
        width: [4, 2][i],
        points: series(&r.samples, &FIGURES[k], i),
    };
    let panels: Vec<Panel> = PANELS
        .iter()
        .map(|&k| Panel {
            lines: vec![line(k, 0), line(k, 1)],
        })
        .collect();
    let x_max = r.stream_s.max(1.0);
    let x_step = linear_step(x_max / 60.0).max(0.5) * 60.0;
    let marks: Vec<f64> = r.faults.iter().map(|f| f.t_s).collect();
    let axes = timeseries(path, &panels, 2, x_max, x_step, &marks)?;
    Ok((axes, x_step))
}

/// A row of the sides table: name, a side's cell.
type SideRow = (&'static str, fn(&ChurnSide) -> String);

/// The Markdown report; `chart` is the PNG's file name with its axes and time step.
pub fn markdown(r: &ChurnRun, chart: Option<(&str, &[Axis], f64)>) -> String {
    let growth: Vec<[Growth; 2]> = FIGURES
        .iter()
        .map(|f| [0, 1].map(|i| Growth::of(&series(&r.samples, f, i), r.stream_s)))
        .collect();
    let (title, faults, flags) = match r.faults_enabled {
        true => (
            " with API server kills",
            format!(
                ", the API server SIGKILLed and restarted every {:.0} s ({:.0} s down)",
                r.fault_every_s, r.fault_down_s
            ),
            format!(" --churn-faults --churn-fault-every {:.0}", r.fault_every_s),
        ),
        false => Default::default(),
    };
    let mut md = format!(
        "# Churn bench: ours vs the Go karmada-scheduler v1.18.2, {} min{title}\n\n",
        r.minutes
    );
    md += &format!(
        "Run {} on {}, **commit `{}`** (the scheduler measured is the one built from it), seed \
         {}. Reproduce: `hack/bench.sh churn --churn-minutes {} --churn-live {} \
         --churn-rate {} --churn-scale-rate {} --churn-members {}{flags}`.\n\n",
        r.date, r.machine, r.git_commit, r.seed, r.minutes, r.live, r.rate, r.scale_rate, r.members,
    );
    md += &format!(
        "Both schedulers ran at the same time on one control plane (crates/testenv: etcd, \
         kube-apiserver, {m} member clusters each with a real Go karmada-scheduler-estimator), \
         with `--enable-scheduler-estimator=true --kube-api-qps={q} --kube-api-burst={b}` and \
         each its own `--scheduler-name`. For {min} min ({s:.0} s), a steady stream: {rate} \
         binding creations/s, {sr} scale changes/s and, once {live} bindings were alive, \
         {rate} deletions/s (the oldest first), the live count staying at {live}{faults}. \
         Creations come in pairs, one binding of the same template for each scheduler, so each \
         got half of the stream; a scale change patches both members of a pair to the same \
         replicas, choosing among the pairs both have placed at their current generation \
         when there are any; a deletion deletes both. \
         Every {every:.0} s the bench sampled both processes.\n\n",
        m = r.members,
        q = r.kube_api_qps,
        b = r.kube_api_burst,
        min = r.minutes,
        s = r.stream_s,
        rate = r.rate,
        sr = r.scale_rate,
        live = r.live,
        every = r.sample_s,
    );
    if let (Some(a), Some(b)) = (r.samples.first(), r.samples.last()) {
        let dt = (b.t_s - a.t_s).max(1e-9);
        let cores = |i: usize| (b.cpu_s[i] - a.cpu_s[i]) / dt;
        let load = r.samples.iter().map(|s| s.load1).sum::<f64>() / r.samples.len() as f64;
        md += &format!(
            "CPU used during the stream: ours {:.2} cores, Go {:.2} cores. The machine's \
             1-minute load average over the samples: {load:.1} (mean; other work shared the \
             cores: a scheduler that falls behind here may only be starved).\n\n",
            cores(0),
            cores(1)
        );
    }
    md += "## Growth after warm-up\n\n";
    md += &format!(
        "The first half of the run is the warm-up; growth is the least-squares slope over the \
         samples of the second half (from {:.0} s). *Flat* means that slope, held for an hour, \
         adds at most 5 % of the RSS at the start of the second half.\n\n",
        r.stream_s / 2.0
    );
    // The verdict: flat or growing.
    let rss = growth[0].map(|g| {
        let word = match (g.per_min_second_half, g.mid) {
            (Some(s), Some(mid)) if mid > 0.0 && s * 60.0 <= 0.05 * mid => "flat",
            (Some(_), Some(mid)) if mid > 0.0 => "**growing**",
            _ => "not enough samples",
        };
        format!("{word} ({} MiB/min)", num(g.per_min_second_half, 3))
    });
    md += &format!("* RSS: ours {}, Go {}.\n", rss[0], rss[1]);
    md += &format!(
        "* Open file descriptors: ours {} /min, Go {} /min (first → last: {} → {}, {} → {}).\n\n",
        num(growth[1][0].per_min_second_half, 2),
        num(growth[1][1].per_min_second_half, 2),
        num(growth[1][0].first, 0),
        num(growth[1][0].last, 0),
        num(growth[1][1].first, 0),
        num(growth[1][1].last, 0),
    );
    md += "| figure | | ours | Go |\n|---|---|---:|---:|\n";
    for ((name, _, digits, _), [a, b]) in FIGURES.iter().zip(&growth) {
        for (label, value, d) in GROWTH_ROWS {
            let d = d.unwrap_or(*digits);
            let (x, y) = (num(value(a), d), num(value(b), d));
            md += &format!("| {name} | {label} | {x} | {y} |\n");
        }
    }
    md += "\n";
    if let Some(e) = &r.end_sample {
        let [rss, fds, threads, tasks] = [0, 1, 2, 3].map(|k| {
            let (_, _, digits, get) = FIGURES[k];
            [0, 1].map(|i| num(get(e, i), digits))
        });
        md += &format!(
            "After the stream and the settle: RSS ours {} MiB, Go {} MiB; FDs {} / {}; \
             threads {} / {}; tasks {} / goroutines {}. Our estimator client reported {} of \
             {} estimators connected (the Go scheduler exports no such figure; the socket \
             counts above are read from `/proc` for both).\n\n",
            rss[0],
            rss[1],
            fds[0],
            fds[1],
            threads[0],
            threads[1],
            tasks[0],
            tasks[1],
            num(e.estimator_connected, 0),
            r.members,
        );
    }
    if let Some((png, axes, x_step)) = chart {
        md += &format!("## Over time\n\n![churn chart]({png})\n\n");
        md += &format!(
            "Orange: ours (the wider line: where both are equal, blue with an orange rim); \
             blue: Go. Vertical gridlines every {:.0} s{}. Panels, left to \
             right and top to bottom (each y axis from 0, the gridline step and the top given):\n\n",
            x_step,
            if r.faults.is_empty() {
                String::new()
            } else {
                "; red lines: API server kills".into()
            }
        );
        for (k, a) in PANELS.iter().zip(axes) {
            let (name, step, top) = (FIGURES[*k].0, a.step, a.top);
            md += &format!("* {name}: gridlines every {step}, top {top}\n");
        }
        md += "\n";
    }
    // The sampled figures, ours and Go side by side.
    md += "| s | live |";
    for (_, [a, b], _, _) in &FIGURES {
        md += &format!(" {a} | {b} |");
    }
    md += " load |\n|---:|---:|";
    md += &"---:|---:|".repeat(FIGURES.len());
    md += "---:|\n";
    let step = r.samples.len().div_ceil(30).max(1);
    for (i, s) in r.samples.iter().enumerate() {
        if i % step == 0 || i + 1 == r.samples.len() {
            md += &format!("| {:.0} | {} |", s.t_s, s.live);
            for (_, _, digits, get) in &FIGURES {
                let (a, b) = (num(get(s, 0), *digits), num(get(s, 1), *digits));
                md += &format!(" {a} | {b} |");
            }
            md += &format!(" {:.1} |\n", s.load1);
        }
    }
    md += "\n";

    // ---- Correctness at the end.
    md += "## At the end\n\n";
    md += &match r.settled_after_s {
        Some(s) => format!(
            "Every live binding of both schedulers was settled {s:.1} s after the stream \
             stopped (a `Scheduled` condition; when `True`, `schedulerObservedGeneration` equal \
             to the generation).\n\n"
        ),
        None => format!(
            "**Not every live binding was settled within {:.0} s after the stream.**\n\n",
            r.settle_s
        ),
    };
    md += &format!(
        "Placement agreement of the live pairs with the same history (sorted `spec.clusters` \
         and the `Scheduled` status of both members): **{}/{}**{}.\n\n",
        r.agree,
        r.pairs,
        if r.broken_pairs > 0 {
            format!(
                " ({} more pairs left out: a request of theirs failed during a fault, so \
                 their members may have seen different histories)",
                r.broken_pairs
            )
        } else {
            String::new()
        }
    );
    if r.unplaced_pairs > 0 {
        md += &format!(
            "Pairs scaled while one member was not yet placed at its generation (the stream \
             keeps its scale rate when no pair is placed by both; {} of the {} scale changes \
             were so), compared apart since the scheduler behind may have seen two \
             generations as one, and a Divided placement depends on its history: **{}/{}** \
             agree.\n\n",
            r.ops.scaled_before_placed, r.ops.scaled, r.unplaced_agree, r.unplaced_pairs
        );
    }
    for d in &r.disagreements {
        md += &format!("* {d}\n");
    }
    if !r.disagreements.is_empty() {
        md += "\n";
    }
    md += "| | ours | Go |\n|---|---:|---:|\n";
    let [a, b] = &r.sides;
    let lat = |s: &ChurnSide| {
        let [p50, p99, max] = [s.latency_p50_ms, s.latency_p99_ms, s.latency_max_ms];
        format!("{} / {} / {}", num(p50, 0), num(p99, 0), num(max, 0))
    };
    let exited = |s: &ChurnSide| s.exited.clone().unwrap_or_else(|| "no".into());
    let rows: [SideRow; 6] = [
        ("live: `Scheduled=True` at their generation", |s| {
            s.scheduled.to_string()
        }),
        ("live: `Scheduled=False`", |s| s.unschedulable.to_string()),
        ("live: incomplete", |s| s.incomplete_count.to_string()),
        ("creation → `Scheduled` p50 / p99 / max (ms)", lat),
        ("deleted before being decided", |s| {
            s.deleted_undecided.to_string()
        }),
        ("exited during the run", exited),
    ];
    for (name, cell) in rows {
        md += &format!("| {name} | {} | {} |\n", cell(a), cell(b));
    }
    md += "\n";
    for s in [a, b] {
        for i in &s.incomplete {
            md += &format!("* {} incomplete: {i}\n", s.scheduler_name);
        }
    }
    let o = &r.ops;
    md += &format!(
        "Requests of the stream (bindings): {} created, {} scale changes, {} deleted; failed: \
         {} creations, {} scale changes, {} deletions; {} ticks skipped with {IN_FLIGHT} \
         requests in flight; {} scale ticks found no pair to scale; {} creation ticks held \
         back while a failed deletion was retried.\n\n",
        o.created,
        o.scaled,
        o.deleted,
        o.create_failed,
        o.scale_failed,
        o.delete_failed,
        o.skipped_ticks,
        o.no_scale_candidate,
        o.creations_held
    );
    if !r.faults.is_empty() {
        md += "| fault at (s) | API server serving again after (s) | error |\n|---:|---:|---|\n";
        for f in &r.faults {
            md += &format!(
                "| {:.0} | {:.1} | {} |\n",
                f.t_s,
                f.back_after_s,
                f.error.as_deref().unwrap_or("")
            );
        }
        md += "\n";
    }
    md += &format!(
        "## Method\n\n\
         * Bindings: {TEMPLATES} templates of the bench's seeded workload over the {} member \
         clusters (every replica strategy, affinities, spread constraints, tolerations; some \
         unschedulable by design), cycled; each pair's members are named `<template>-c<n>r` \
         (ours) and `-c<n>g` (Go).\n\
         * RSS: `VmRSS`, threads: `Threads` of `/proc/<pid>/status`; file descriptors: entries \
         of `/proc/<pid>/fd`; estimator connections: established TCP connections of the \
         process to the estimators' ports (`/proc/<pid>/net/tcp`, matched by socket inode).\n\
         * From `/metrics`: `workqueue_depth{{name=\"scheduler-queue\"}}` (both); ours \
         `{TOKIO_TASKS}` (tokio's alive tasks, our own gauge) and \
         `{ESTIMATOR_CONNECTED}`; Go `{GOROUTINES}`.\n\
         * Backlog: live bindings of the scheduler without a `Scheduled` condition, or \
         `Scheduled=True` for an older generation (a scale change not placed yet), from the \
         bench's own watch.\n\
         * Growth per minute: least-squares slope of the samples, over the second half of the \
         stream and over all of it.\n",
        r.members
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_over_the_second_half() {
        // 10 MiB flat for 5 minutes, then 1 MiB/min.
        let p: Vec<(f64, f64)> = (0..=20)
            .map(|i| {
                let t = f64::from(i) * 30.0;
                (
                    t,
                    if t < 300.0 {
                        10.0
                    } else {
                        10.0 + (t - 300.0) / 60.0
                    },
                )
            })
            .collect();
        let g = Growth::of(&p, 600.0);
        assert_eq!(g.first, Some(10.0));
        assert_eq!(g.mid, Some(10.0));
        assert_eq!(g.last, Some(15.0));
        assert!((g.per_min_second_half.unwrap() - 1.0).abs() < 1e-9, "{g:?}");
        assert!(g.per_min_whole.unwrap() < 1.0);
    }

    #[test]
    fn report_of_a_run() {
        let sample = |t: f64, rss: u64| ChurnSample {
            t_s: t,
            live: 300,
            rss_kib: [rss, 2 * rss],
            fds: [30, 40],
            tasks: [Some(50.0), Some(200.0)],
            ..Default::default()
        };
        let r = ChurnRun {
            minutes: 1.0,
            stream_s: 60.0,
            live: 300,
            members: 3,
            samples: (0..5)
                .map(|i| sample(f64::from(i) * 15.0, 20_480))
                .collect(),
            pairs: 150,
            agree: 150,
            ..Default::default()
        };
        let md = markdown(&r, None);
        assert!(
            md.contains("RSS: ours flat (0.000 MiB/min), Go flat"),
            "{md}"
        );
        assert!(md.contains("**150/150**"), "{md}");
    }
}
