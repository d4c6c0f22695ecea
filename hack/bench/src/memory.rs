//! `run --phases memory`: both schedulers' resident memory at a large scale, in bounded time:
//! the originals only, RSS sampled until both halves are placed or `--memory-cap` expires
//! (Go's peak is then a lower bound; `templates/memory.md`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::figures::{self, fill, fill_stamped, side_rows, table};
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
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
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
    log!(t0, "{} bindings created", items.len());

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
                log!(t0, "{} half scheduled", sides[i]);
            }
            placed.len()
        });
        if last_point.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10)) {
            last_point = Some(now);
            let [r, g] = pids.map(|pid| memory_kib(pid).map_or(0, |m| m.0));
            let ([dr, dg], [nr, ng]) = (done, keys.each_ref().map(Vec::len));
            let mib = |k: u64| format!("{:.0}", k as f64 / 1024.0);
            let (rm, gm) = (mib(r), mib(g));
            log!(
                t0,
                "done rust {dr}/{nr} go {dg}/{ng}; RSS rust {rm} MiB, go {gm} MiB"
            );
            let at = now.duration_since(start).as_secs_f64();
            series.push((at, dr, dg, r, g));
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

/// The Markdown report of a memory run.
pub fn markdown(r: &MemoryRun) -> String {
    let mib = |k: u64| k as f64 / 1024.0;
    let placed = format!("bindings placed (of {} each)", r.rust.owned);
    let [placed, all_done, peak, end] = side_rows!(&r.rust, &r.go;
        placed, |s| Some(s.done as f64), 0, Higher;
        "all of its half placed after (s)", |s| s.all_done_s, 0, Lower;
        "peak RSS (MiB, VmHWM)", |s| figures::mib(s.rss_peak_kib), 1, Lower;
        "RSS at the end (MiB)", |s| figures::mib(s.rss_end_kib), 1, Lower;
    );
    let rows = [placed, all_done, peak.target(r.ratio() <= 1.0 / 3.0), end];
    let step = r.series.len().div_ceil(30).max(1);
    let series = r
        .series
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || i + 1 == r.series.len());
    let series = series.map(|(_, p)| {
        let (s, od, gd, orss, grss) = *p;
        format!(
            "| {s:.0} | {od} | {gd} | {:.0} | {:.0} |\n",
            mib(orss),
            mib(grss)
        )
    });
    let cap = format!("{}", r.cap_s);
    let unfinished = if r.go_finished() {
        String::new()
    } else {
        fill(
            include_str!("../templates/memory-unfinished.md"),
            &[("cap", format!("{:.0}", r.cap_s))],
        )
    };
    let bound = if r.go_finished() { "" } else { "at most " };
    fill_stamped(
        include_str!("../templates/memory.md"),
        &r.stamp,
        &[
            ("clusters", r.clusters.to_string()),
            ("bindings", r.bindings.to_string()),
            ("seed", r.seed.to_string()),
            ("qps", r.kube_api_qps.to_string()),
            ("burst", r.kube_api_burst.to_string()),
            ("cap", cap),
            ("ratio", format!("{bound}{:.2}", r.ratio())),
            ("figures", table(&rows)),
            ("unfinished", unfinished),
            ("series", series.collect()),
        ],
    )
}
