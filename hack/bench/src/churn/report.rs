//! The churn bench's report and chart: each figure's growth after warm-up, the samples over
//! time, and the state of every live binding and pair at the end.

use super::{ChurnRun, ChurnSample, ChurnSide, FIGURES, Figure, IN_FLIGHT, TEMPLATES};
use super::{ESTIMATOR_CONNECTED, GOROUTINES, TOKIO_TASKS};
use crate::chart::{Axis, GO, Line, Panel, RUST, linear_step, timeseries};
use crate::figures::{Row, fill, fill_stamped, num, side_rows, table};
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
    let cpu = match (r.samples.first(), r.samples.last()) {
        (Some(a), Some(b)) => {
            let dt = (b.t_s - a.t_s).max(1e-9);
            let cores = |i: usize| (b.cpu_s[i] - a.cpu_s[i]) / dt;
            let load = r.samples.iter().map(|s| s.load1).sum::<f64>() / r.samples.len() as f64;
            format!(
                "CPU used during the stream: ours {:.2} cores, Go {:.2} cores. The machine's \
                 1-minute load average over the samples: {load:.1} (mean; other work shared the \
                 cores: a scheduler that falls behind here may only be starved).\n\n",
                cores(0),
                cores(1)
            )
        }
        _ => String::new(),
    };
    // The verdict: flat or growing.
    let rss = growth[0].map(|g| {
        let word = match (g.per_min_second_half, g.mid) {
            (Some(s), Some(mid)) if mid > 0.0 && s * 60.0 <= 0.05 * mid => "flat",
            (Some(_), Some(mid)) if mid > 0.0 => "**growing**",
            _ => "not enough samples",
        };
        format!("{word} ({} MiB/min)", num(g.per_min_second_half, 3))
    });
    let fds = &growth[1];
    let [rss_ours, rss_go] = rss;
    fill_stamped(
        include_str!("../../templates/churn.md"),
        &r.stamp,
        &[
            ("minutes", r.minutes.to_string()),
            ("title", title.into()),
            ("seed", r.seed.to_string()),
            ("live", r.live.to_string()),
            ("rate", r.rate.to_string()),
            ("scale_rate", r.scale_rate.to_string()),
            ("members", r.members.to_string()),
            ("flags", flags),
            ("qps", r.kube_api_qps.to_string()),
            ("burst", r.kube_api_burst.to_string()),
            ("stream_s", format!("{:.0}", r.stream_s)),
            ("faults", faults),
            ("sample_s", format!("{:.0}", r.sample_s)),
            ("cpu", cpu),
            ("half_s", format!("{:.0}", r.stream_s / 2.0)),
            ("rss_ours", rss_ours),
            ("rss_go", rss_go),
            ("fds_ours", num(fds[0].per_min_second_half, 2)),
            ("fds_go", num(fds[1].per_min_second_half, 2)),
            ("fds_first_ours", num(fds[0].first, 0)),
            ("fds_last_ours", num(fds[0].last, 0)),
            ("fds_first_go", num(fds[1].first, 0)),
            ("fds_last_go", num(fds[1].last, 0)),
            ("growth", growth_table(&growth)),
            ("end_sample", end_sample(r)),
            ("over_time", over_time(r, chart)),
            ("at_end", at_end(r)),
            ("templates", TEMPLATES.to_string()),
            ("tokio_tasks", TOKIO_TASKS.into()),
            ("estimator_connected", ESTIMATOR_CONNECTED.into()),
            ("goroutines", GOROUTINES.into()),
        ],
    )
}

/// Each figure's growth, ours and Go.
fn growth_table(growth: &[[Growth; 2]]) -> String {
    let mut rows = Vec::new();
    for ((name, _, digits, _), [a, b]) in FIGURES.iter().zip(growth) {
        for (label, value, d) in GROWTH_ROWS {
            let d = d.unwrap_or(*digits);
            rows.push(Row::new(format!("{name}: {label}"), value(a), value(b), d));
        }
    }
    table(&rows)
}

/// The figures after the stream and the settle.
fn end_sample(r: &ChurnRun) -> String {
    let Some(e) = &r.end_sample else {
        return String::new();
    };
    let [rss, fds, threads, tasks] = [0, 1, 2, 3].map(|k| {
        let (_, _, digits, get) = FIGURES[k];
        [0, 1].map(|i| num(get(e, i), digits))
    });
    format!(
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
    )
}

/// The chart, when drawn, and the samples, ours and Go side by side.
fn over_time(r: &ChurnRun, chart: Option<(&str, &[Axis], f64)>) -> String {
    let mut md = String::new();
    if let Some((png, axes, x_step)) = chart {
        let kills = if r.faults.is_empty() {
            ""
        } else {
            "; red lines: API server kills"
        };
        md += &format!(
            "## Over time\n\n![churn chart]({png})\n\nOrange: ours (the wider line: where both \
             are equal, blue with an orange rim); blue: Go. Vertical gridlines every {x_step:.0} \
             s{kills}. Panels, left to right and top to bottom (each y axis from 0, the gridline \
             step and the top given):\n\n"
        );
        for (k, a) in PANELS.iter().zip(axes) {
            let (name, step, top) = (FIGURES[*k].0, a.step, a.top);
            md += &format!("* {name}: gridlines every {step}, top {top}\n");
        }
        md += "\n";
    }
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
    md + "\n"
}

/// Correctness at the end: settled, agreement, each side's live bindings, the stream's
/// requests and the faults.
fn at_end(r: &ChurnRun) -> String {
    let settled = match r.settled_after_s {
        Some(s) => format!(
            "Every live binding of both schedulers was settled {s:.1} s after the stream \
             stopped (a `Scheduled` condition; when `True`, `schedulerObservedGeneration` equal \
             to the generation)."
        ),
        None => format!(
            "**Not every live binding was settled within {:.0} s after the stream.**",
            r.settle_s
        ),
    };
    let broken = match r.broken_pairs {
        0 => String::new(),
        n => format!(
            " ({n} more pairs left out: a request of theirs failed during a fault, so their \
             members may have seen different histories)"
        ),
    };
    let unplaced = match r.unplaced_pairs {
        0 => String::new(),
        n => format!(
            "Pairs scaled while one member was not yet placed at its generation (the stream \
             keeps its scale rate when no pair is placed by both; {} of the {} scale changes \
             were so), compared apart since the scheduler behind may have seen two \
             generations as one, and a Divided placement depends on its history: **{}/{n}** \
             agree.\n\n",
            r.ops.scaled_before_placed, r.ops.scaled, r.unplaced_agree
        ),
    };
    let list = |items: Vec<String>| match items.is_empty() {
        true => String::new(),
        false => items.concat() + "\n",
    };
    let disagreements = list(r.disagreements.iter().map(|d| format!("* {d}\n")).collect());
    let [a, b] = &r.sides;
    let incomplete = r.sides.iter().flat_map(|s| {
        s.incomplete
            .iter()
            .map(|i| format!("* {} incomplete: {i}\n", s.scheduler_name))
    });
    let count = |n: usize| Some(n as f64);
    let sides = side_rows!(a, b;
        "live: `Scheduled=True` at their generation", |s| count(s.scheduled), 0, Neither;
        "live: `Scheduled=False`", |s| count(s.unschedulable), 0, Neither;
        "live: incomplete", |s| count(s.incomplete_count), 0, Lower;
        "creation → `Scheduled` p50 (ms)", |s| s.latency_p50_ms, 0, Lower;
        "creation → `Scheduled` p99 (ms)", |s| s.latency_p99_ms, 0, Lower;
        "creation → `Scheduled` max (ms)", |s| s.latency_max_ms, 0, Lower;
        "deleted before being decided", |s| count(s.deleted_undecided as usize), 0, Lower;
    );
    let exited = |s: &ChurnSide| s.exited.clone().unwrap_or_else(|| "no".into());
    let faults = r.faults.iter().map(|f| {
        let error = f.error.as_deref().unwrap_or("");
        format!("| {:.0} | {:.1} | {error} |\n", f.t_s, f.back_after_s)
    });
    let faults = match r.faults.is_empty() {
        true => String::new(),
        false => {
            "| fault at (s) | API server serving again after (s) | error |\n|---:|---:|---|\n"
                .to_string()
                + &faults.collect::<String>()
                + "\n"
        }
    };
    let o = &r.ops;
    fill(
        include_str!("../../templates/churn-end.md"),
        &[
            ("settled", settled),
            ("agree", r.agree.to_string()),
            ("pairs", r.pairs.to_string()),
            ("broken", broken),
            ("unplaced", unplaced),
            ("disagreements", disagreements),
            ("sides", table(&sides)),
            ("exited_ours", exited(a)),
            ("exited_go", exited(b)),
            ("incomplete", list(incomplete.collect())),
            ("created", o.created.to_string()),
            ("scaled", o.scaled.to_string()),
            ("deleted", o.deleted.to_string()),
            ("create_failed", o.create_failed.to_string()),
            ("scale_failed", o.scale_failed.to_string()),
            ("delete_failed", o.delete_failed.to_string()),
            ("skipped", o.skipped_ticks.to_string()),
            ("in_flight", IN_FLIGHT.to_string()),
            ("no_candidate", o.no_scale_candidate.to_string()),
            ("held", o.creations_held.to_string()),
            ("faults", faults),
        ],
    )
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
