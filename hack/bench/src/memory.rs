//! `run --phases memory`: both schedulers' resident memory at a large scale, in bounded time.
//!
//! At 1,000 clusters the Go scheduler needs about a second per binding, so the full bench of
//! 10,000 bindings (with mirrors and churn) would take hours. This mode creates the originals
//! only (half for each scheduler), samples both processes' RSS, and stops when both halves
//! are scheduled or after `--memory-cap` seconds. The Rust scheduler keeps only its own
//! bindings decoded, so its figure is complete as soon as its half is placed; the Go
//! scheduler's memory grows as it places more, so when it is stopped early its peak so far
//! is a lower bound of its peak, and the ratio reported is an upper bound of the true one.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::plane::{create_bindings, keys_of, log, originals, start_plane, start_schedulers};
use crate::procs::{RssSampler, Sched, memory_kib};
use crate::scenario::Scenario;

/// One scheduler's side of a memory run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MemSide {
    pub scheduler_name: String,
    pub owned: usize,
    /// Bindings of its half with a `Scheduled` condition when the run stopped.
    pub done: usize,
    /// Seconds from the first creation to its last binding's `Scheduled`, when all were.
    pub all_done_s: Option<f64>,
    pub rss_peak_kib: u64,
    pub rss_end_kib: u64,
}

/// A whole memory run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MemoryRun {
    pub clusters: usize,
    pub bindings: usize,
    pub seed: u64,
    pub kube_api_qps: f64,
    pub kube_api_burst: u32,
    pub date: String,
    pub machine: String,
    pub git_commit: String,
    pub cap_s: f64,
    pub elapsed_s: f64,
    pub rust: MemSide,
    pub go: MemSide,
    /// Every 10 s: seconds, Rust done, Go done, Rust RSS KiB, Go RSS KiB.
    pub series: Vec<(f64, usize, usize, u64, u64)>,
}

impl MemoryRun {
    /// Rust peak / Go peak; an upper bound when the Go half was not finished.
    pub fn ratio(&self) -> f64 {
        self.rust.rss_peak_kib as f64 / self.go.rss_peak_kib.max(1) as f64
    }

    pub fn go_finished(&self) -> bool {
        self.go.done == self.go.owned
    }
}

/// Runs the memory mode.
pub async fn run(cfg: &Scenario) -> anyhow::Result<MemoryRun> {
    let cap = cfg.samples.cap;
    let t0 = Instant::now();
    let plane = start_plane(cfg, t0).await?;
    let (mut rust, mut go) = start_schedulers(cfg, &plane, t0).await?;
    let pids = [rust.pid(), go.pid()];
    let (sampler, sampler_task) = RssSampler::start(pids.to_vec(), Duration::from_millis(250));
    let sides = [rust.name.clone(), go.name.clone()];
    let items = originals(&plane.wl, &sides);
    let keys = sides.clone().map(|s| keys_of(&items, &s));
    let start = Instant::now();
    let (client, observer) = (&plane.client, &plane.observer);
    create_bindings(client, observer, &items, cfg.create_concurrency).await?;
    log(t0, format!("{} bindings created", items.len()));

    // When each of a side's bindings was placed.
    let placed = |i: usize| -> Vec<Instant> {
        observer
            .snapshot(&keys[i])
            .iter()
            .filter_map(|o| o.decided_at)
            .collect()
    };
    let mut series = Vec::new();
    let mut all_done = [None, None];
    let mut last_point = None::<Instant>;
    loop {
        let now = Instant::now();
        let done = [0, 1].map(|i| {
            let placed = placed(i);
            if placed.len() == keys[i].len() && all_done[i].is_none() {
                let last = placed.iter().max();
                all_done[i] = last.map(|t| t.saturating_duration_since(start).as_secs_f64());
                log(t0, format!("{} half scheduled", sides[i]));
            }
            placed.len()
        });
        if last_point.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10)) {
            last_point = Some(now);
            let [r, g] = pids.map(|pid| memory_kib(pid).map_or(0, |m| m.0));
            let (n, mib) = (keys.each_ref().map(Vec::len), |k: u64| k as f64 / 1024.0);
            log(
                t0,
                format!(
                    "done rust {}/{} go {}/{}; RSS rust {:.0} MiB, go {:.0} MiB",
                    done[0],
                    n[0],
                    done[1],
                    n[1],
                    mib(r),
                    mib(g)
                ),
            );
            series.push((
                now.duration_since(start).as_secs_f64(),
                done[0],
                done[1],
                r,
                g,
            ));
        }
        // Finished: both halves placed and a moment of rest for late allocations to show.
        let settled = all_done.iter().all(Option::is_some);
        if settled || now.duration_since(start) >= cap {
            tokio::time::sleep(Duration::from_secs(3)).await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    rust.check_alive()?;
    go.check_alive()?;
    sampler_task.abort();
    let elapsed_s = start.elapsed().as_secs_f64();
    let side = |i: usize, s: &Sched| {
        let (rss, hwm) = memory_kib(s.pid()).unwrap_or((0, 0));
        MemSide {
            scheduler_name: s.name.clone(),
            owned: keys[i].len(),
            done: placed(i).len(),
            all_done_s: all_done[i],
            rss_peak_kib: hwm.max(sampler.max(i)),
            rss_end_kib: rss,
        }
    };
    let out = MemoryRun {
        clusters: cfg.workload.clusters,
        bindings: cfg.workload.bindings,
        seed: cfg.workload.seed,
        kube_api_qps: cfg.flags.qps,
        kube_api_burst: cfg.flags.burst,
        cap_s: cap.as_secs_f64(),
        elapsed_s,
        rust: side(0, &rust),
        go: side(1, &go),
        series,
        ..Default::default()
    };
    drop((rust, go));
    plane.stop();
    Ok(out)
}

/// A row of the figures: its name and each side's figure.
type Row = (&'static str, fn(&MemSide) -> String);

/// The Markdown report of a memory run.
pub fn markdown(r: &MemoryRun) -> String {
    let mib = |k: u64| k as f64 / 1024.0;
    let mut md = format!(
        "# karmada-scheduler: Rust vs Go v1.18.2 — memory at {} clusters × {} bindings\n\n",
        r.clusters, r.bindings
    );
    md += &format!(
        "Run {} on {} (commit `{}`), seed {}. Both schedulers ran at the same time against one \
         kube-apiserver with `--kube-api-qps={} --kube-api-burst={}`, each owning half of the \
         bindings. Reproduce: `hack/bench.sh run --phases memory --clusters {} --bindings {} --memory-cap {}`.\n\n",
        r.date,
        r.machine,
        r.git_commit,
        r.seed,
        r.kube_api_qps,
        r.kube_api_burst,
        r.clusters,
        r.bindings,
        r.cap_s
    );
    let verdict = if r.ratio() <= 1.0 / 3.0 {
        "met"
    } else {
        "**missed**"
    };
    let bound = if r.go_finished() { "" } else { "at most " };
    md += "## Target\n\n| target | measured | verdict |\n|---|---|---|\n";
    md += &format!(
        "| ≤ 1/3 of Go's peak RSS at {} clusters × {} bindings | {bound}{:.2} ({:.0} vs {:.0} MiB) | {verdict} |\n\n",
        r.clusters,
        r.bindings,
        r.ratio(),
        mib(r.rust.rss_peak_kib),
        mib(r.go.rss_peak_kib)
    );
    md += "| figure | Rust | Go |\n|---|---:|---:|\n";
    let rows: [Row; 4] = [
        ("bindings placed / owned", |s| {
            format!("{}/{}", s.done, s.owned)
        }),
        ("all of its half placed after (s)", |s| {
            (s.all_done_s).map_or("not finished".to_string(), |s| format!("{s:.0}"))
        }),
        ("peak RSS (MiB, VmHWM)", |s| {
            format!("{:.1}", s.rss_peak_kib as f64 / 1024.0)
        }),
        ("RSS at the end (MiB)", |s| {
            format!("{:.1}", s.rss_end_kib as f64 / 1024.0)
        }),
    ];
    for (name, f) in rows {
        md += &format!("| {name} | {} | {} |\n", f(&r.rust), f(&r.go));
    }
    md.push('\n');
    if !r.go_finished() {
        md += &format!(
            "The run stopped at the cap ({:.0} s) before the Go scheduler had placed its half. \
             Its memory grows with every binding it places (each placed binding holds its \
             `spec.clusters`), so its peak so far is a lower bound of the peak a complete run \
             would show, and the ratio above is an upper bound. The Rust figure is complete: \
             its half was placed, and it does not decode the other scheduler's bindings.\n\n",
            r.cap_s
        );
    }
    md += "## Over time\n\n| s | Rust placed | Go placed | Rust RSS (MiB) | Go RSS (MiB) |\n|---:|---:|---:|---:|---:|\n";
    let step = r.series.len().div_ceil(30).max(1);
    for (i, p) in r.series.iter().enumerate() {
        if i % step == 0 || i + 1 == r.series.len() {
            md += &format!(
                "| {:.0} | {} | {} | {:.0} | {:.0} |\n",
                p.0,
                p.1,
                p.2,
                mib(p.3),
                mib(p.4)
            );
        }
    }
    md += "\n## Method\n\n* Same control plane, workload generator and scheduler flags as the full bench \
           (see `docs/bench/README.md`), originals only: no mirrors, stream or churn.\n\
           * RSS: VmRSS sampled every 250 ms and VmHWM at the end, from `/proc/<pid>/status`.\n\
           * A binding counts as placed when its `Scheduled` condition first appears.\n";
    md
}
