//! `karmada-bench`: this karmada-scheduler and the Go v1.18.2 one, side by side on one
//! kube-apiserver — placement agreement, throughput, latency, algorithm time and memory.
//! Normally run through `hack/bench.sh`, which builds everything first.
//!
//! One command line selects one scenario (the side-by-side run by default, or one of the
//! `--*-only` ones) and becomes one [`scenario::Scenario`]; the engine below runs it, or reads
//! its results back (`--from-results`), stamps them, renders the report (and chart) and writes
//! `<stem>.md` and `.json`.
//!
//! The scenarios (`run`, `memory`, `faults`, `overcommit`, `desched`, `estload`, `churn`,
//! `whole`, `growth`) each own what only they measure and their report. They share the steps
//! in `plane` (control plane, schedulers, bindings created and settled, CPU, perf), the watch
//! in `observe`, the processes in `procs`, `/metrics` in `promtext`, the ceilings in `ceiling`,
//! the oracle replay in `replay`, and the figures' helpers in `stats`, `report` and `chart`.

mod algo;
mod ceiling;
mod chart;
mod churn;
mod desched;
mod estload;
mod faults;
mod growth;
mod jobs;
mod memory;
mod observe;
mod overcommit;
mod plane;
mod procs;
mod promtext;
mod replay;
mod report;
mod results;
mod run;
mod scenario;
mod stats;
mod whole;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::procs::CommonFlags;
use crate::results::Run;

/// Side-by-side benchmark of the Rust and Go karmada-schedulers.
#[derive(Parser, Debug)]
#[command(name = "karmada-bench")]
struct Cli {
    /// Number of Cluster objects.
    #[arg(long, default_value_t = 10)]
    clusters: usize,
    /// Number of bindings (half for each scheduler; each is mirrored to the other later).
    #[arg(long, default_value_t = 1000)]
    bindings: usize,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// `--kube-api-qps` of both schedulers (high by default so that the client limiter is not
    /// what is measured).
    #[arg(long, default_value_t = 5000.0)]
    kube_api_qps: f64,
    /// `--kube-api-burst` of both schedulers.
    #[arg(long, default_value_t = 10000)]
    kube_api_burst: u32,
    /// Enable the accurate estimator in both schedulers, against this many real members with
    /// Go estimators (0 = estimator disabled).
    #[arg(long, default_value_t = 0)]
    estimator: usize,
    /// Extra flag given to both schedulers (repeatable), e.g. `--sched-flag=--feature-gates=WorkloadAffinity=true`.
    #[arg(long = "sched-flag", allow_hyphen_values = true)]
    sched_flags: Vec<String>,
    /// Requests in flight while creating objects.
    #[arg(long, default_value_t = 32)]
    create_concurrency: usize,
    /// Bindings created at a steady pace after the load, to measure latency without a backlog.
    #[arg(long, default_value_t = 200)]
    stream_count: usize,
    /// Give up waiting for a phase after this many seconds.
    #[arg(long, default_value_t = 900)]
    settle_timeout: u64,
    /// The Rust scheduler binary.
    #[arg(long)]
    rust_bin: Option<PathBuf>,
    /// The Go scheduler binary (default: _output/bin/karmada-scheduler).
    #[arg(long)]
    go_bin: Option<PathBuf>,
    /// The upstream scheduler driven offline (hack/build-oracle.sh), used to replay the
    /// history of pairs that disagree after churn (default: _output/bin/karmada-oracle).
    #[arg(long)]
    oracle_bin: Option<PathBuf>,
    /// Record `perf` profiles of the Rust scheduler and the apiserver during the load phase.
    #[arg(long)]
    perf: bool,
    /// Where the report, JSON results and chart go (default docs/bench; with
    /// `--from-results`, beside the results).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// Measure memory only: create the originals (no mirrors, stream or churn) and sample both
    /// schedulers' RSS until both halves are placed or `--memory-cap` expires. Writes
    /// `memory-<C>c-<B>b.md` and `.json`.
    #[arg(long)]
    memory_only: bool,
    /// Seconds after which a `--memory-only` run stops even if the Go half is not placed (its
    /// peak so far is then a lower bound).
    #[arg(long, default_value_t = 1800)]
    memory_cap: u64,
    /// Fault bench only: the fault suite's scenario (10 API server kills, 2 pauses, a faulty
    /// network, the scheduler killed between its writes; a 60 s stream of 100 bindings)
    /// against each scheduler in turn; writes `faults-<K>k-<B>b.md` and `.json` with the
    /// bindings each left incomplete.
    #[arg(long)]
    faults_only: bool,
    /// Descheduler bench only: one pass of the Go karmada-descheduler and of ours over
    /// `--desched-bindings` × `--desched-clusters` with a stub estimator answering after 1 ms;
    /// writes `descheduler-<C>c-<B>b.md` and `.json`.
    #[arg(long)]
    descheduler_only: bool,
    /// `--descheduler-only`: bindings.
    #[arg(long, default_value_t = 1000)]
    desched_bindings: usize,
    /// `--descheduler-only`: clusters (each binding targets all of them).
    #[arg(long, default_value_t = 10)]
    desched_clusters: usize,
    /// `--descheduler-only` and `--whole-karmada-only`: our karmada-descheduler binary.
    #[arg(long)]
    rust_desched_bin: Option<PathBuf>,
    /// Overcommit bench only: a burst of Divided bindings twice the room of the members'
    /// nodes, ours at 1 and 16 workers and the Go scheduler, `SchedulingOvercommitProtection`
    /// off and on; writes `overcommit-<M>m.md` and `.json`.
    #[arg(long)]
    overcommit_only: bool,
    /// `--overcommit-only`: member clusters (with real Go estimators).
    #[arg(long, default_value_t = 2)]
    overcommit_members: usize,
    /// Estimator bench only: the schedulers with the accurate estimators on, each cluster's
    /// estimator behind an `ExternalName` Service, at each of `--est-scales` (one control plane
    /// each): both together, each alone, fault rows at the largest stub scale; writes
    /// `estimators-<L>ms.md`, `.json` and `estimators-<L>ms.png`.
    #[arg(long)]
    estimators_only: bool,
    /// Growth chart only: CPU per binding and peak RSS against clusters, ours and Go, with
    /// the n·log n line, from these `--estimators-only` results files (comma separated; a
    /// later file's scale replaces an earlier one's); writes `growth.md`, `.json`, `.png`.
    #[arg(long, value_delimiter = ',')]
    growth_from: Vec<PathBuf>,
    /// `--estimators-only`: cluster counts (comma separated).
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',')]
    est_scales: Vec<usize>,
    /// `--estimators-only`: bindings of the together phase (half for each scheduler).
    #[arg(long, default_value_t = 200)]
    est_bindings: usize,
    /// `--estimators-only`: bindings each scheduler schedules alone (the same for both).
    #[arg(long, default_value_t = 100)]
    est_alone: usize,
    /// `--estimators-only`: scales up to this many clusters use real Go estimators (members
    /// of the control plane); larger ones the bench's stub.
    #[arg(long, default_value_t = 10)]
    est_real_max: usize,
    /// `--estimators-only`: the stub's latency per call, in milliseconds.
    #[arg(long, default_value_t = 1)]
    est_latency_ms: u64,
    /// `--estimators-only`: skip the fault rows.
    #[arg(long)]
    est_no_faults: bool,
    /// `--estimators-only`: Divided bindings per scheduler per fault row.
    #[arg(long, default_value_t = 20)]
    est_fault_bindings: usize,
    /// Churn (soak) bench only: ours and the Go scheduler side by side on one control plane
    /// whose members run real Go estimators, under a steady stream of creations, scale
    /// changes and deletions at a constant live count; RSS, open FDs, threads, queue depth,
    /// tasks and estimator connections sampled over time; writes `churn-<M>m.md`, `.json` and
    /// `.png` (`churn-<M>m-faults.*` with `--churn-faults`).
    #[arg(long)]
    churn_only: bool,
    /// `--churn-only`: minutes the stream lasts.
    #[arg(long, default_value_t = 60.0)]
    churn_minutes: f64,
    /// `--churn-only`: bindings alive at once (both schedulers; half each).
    #[arg(long, default_value_t = 300)]
    churn_live: usize,
    /// `--churn-only`: creations per second (both schedulers); deletions follow at the same
    /// rate once `--churn-live` is reached.
    #[arg(long, default_value_t = 15.0)]
    churn_rate: f64,
    /// `--churn-only`: scale changes per second (both schedulers).
    #[arg(long, default_value_t = 7.0)]
    churn_scale_rate: f64,
    /// `--churn-only`: seconds between samples.
    #[arg(long, default_value_t = 15)]
    churn_sample_seconds: u64,
    /// `--churn-only`: member clusters, each with a real Go estimator.
    #[arg(long, default_value_t = 3)]
    churn_members: usize,
    /// `--churn-only`: SIGKILL and restart the API server periodically (the soak's faults;
    /// down 2 s each time).
    #[arg(long)]
    churn_faults: bool,
    /// `--churn-faults`: seconds between API server kills.
    #[arg(long, default_value_t = 300)]
    churn_fault_every: u64,
    /// Whole-Karmada bench only: in one whole Karmada (`hack/karmada-up.sh`), create
    /// `--whole-deployments` Deployments with a PropagationPolicy each and wait until every
    /// member holds what its binding says, once per `--whole-rounds` entry (the scheduler and
    /// descheduler swapped between rounds); writes `whole-karmada-<N>d[-cm-qps<Q>].md` and
    /// `.json`.
    /// `--create-concurrency` creations are in flight, `--settle-timeout` bounds a round,
    /// `--rust-bin`/`--rust-desched-bin` are ours.
    #[arg(long)]
    whole_karmada_only: bool,
    /// `--whole-karmada-only`: Deployments a round.
    #[arg(long, default_value_t = 100)]
    whole_deployments: usize,
    /// `--whole-karmada-only`: the rounds' schedulers in order (`ours`, `go`; comma separated).
    #[arg(long, default_value = "ours,go", value_delimiter = ',')]
    whole_rounds: Vec<String>,
    /// `--whole-karmada-only`: creations a second (0: all at once).
    #[arg(long, default_value_t = 0.0)]
    whole_rate: f64,
    /// `--whole-karmada-only`: the state dir of a running whole Karmada to use and leave
    /// running (default: start one in a temporary dir and stop it after).
    #[arg(long)]
    whole_state_dir: Option<PathBuf>,
    /// Do not run: read these results (the JSON an earlier run of the same scenario wrote)
    /// and write its report and chart again, e.g. after the report's wording changed.
    #[arg(long)]
    from_results: Option<PathBuf>,
    /// Print only; write nothing under the output directory.
    #[arg(long)]
    no_write: bool,
}

/// When a run began, where, and from which commit (`-dirty` when tracked files differed):
/// taken before the run, as the tree may change while a long run goes on.
#[derive(Clone, Default)]
pub struct Stamp {
    pub date: String,
    pub machine: String,
    pub git_commit: String,
}

fn sh(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn stamp(root: &Path) -> Stamp {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("model name"))?;
            Some(l.split_once(':')?.1.trim().to_string())
        })
        .unwrap_or_default();
    let root = root.to_string_lossy();
    Stamp {
        date: sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine: format!(
            "{} CPUs ({cpu}), {}",
            sh("nproc", &[]),
            sh("uname", &["-sr"])
        ),
        git_commit: sh(
            "git",
            &["-C", &root, "describe", "--always", "--dirty", "--abbrev=7"],
        ),
    }
}

/// Results written by an earlier run (`--from-results`).
pub(crate) fn read_results<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("decoding {}", path.display()))
}

/// What the engine needs of a scenario's results: where its stamp goes, its file names and
/// its report.
trait Report: Serialize + DeserializeOwned {
    fn stamp(&mut self, s: Stamp);
    /// `<stem>.md` and `<stem>.json` under the output directory.
    fn stem(&self) -> String;
    /// The JSON's stem when it differs from the report's.
    fn json_stem(&self) -> String {
        self.stem()
    }
    /// The Markdown report; charts are drawn into `out` when it is given.
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String>;
    /// What the console shows.
    fn console(&self, md: &str) -> String {
        md.to_string()
    }
}

macro_rules! stamped {
    () => {
        fn stamp(&mut self, s: Stamp) {
            (self.date, self.machine, self.git_commit) = (s.date, s.machine, s.git_commit);
        }
    };
}

impl Report for Run {
    stamped!();
    fn stem(&self) -> String {
        format!("report-{}c-{}b", self.clusters, self.bindings)
    }
    fn json_stem(&self) -> String {
        format!("results-{}c-{}b", self.clusters, self.bindings)
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        // One chart of every scale with results in the output directory.
        let runs = out.map(|o| all_runs(o, self)).unwrap_or_default();
        let points: Vec<chart::Point> = runs.iter().map(chart::Point::of).collect();
        let scales: Vec<String> = runs
            .iter()
            .map(|r| format!("{} clusters × {} bindings", r.clusters, r.bindings))
            .collect();
        let step = match out {
            Some(o) => chart::draw(&o.join("chart.png"), &points)?,
            None => 0.0,
        };
        Ok(run::report::markdown(self, "chart.png", step, &scales))
    }
    fn console(&self, _md: &str) -> String {
        let mut s = format!(
            "{}\n{}",
            run::report::targets(self),
            run::report::figures(self)
        );
        for (title, a) in [
            ("fresh", &self.agreement_fresh),
            ("after churn", &self.agreement_after_churn),
        ] {
            s += &format!(
                "agreement ({title}): {}/{} = {:.2}%\n",
                a.agree,
                a.pairs,
                a.ratio() * 100.0
            );
            for d in &a.disagreements {
                s += &format!(
                    "  {} [{}]\n    rust: {}  ({})\n    go:   {}  ({})\n",
                    d.binding, d.strategy, d.rust, d.rust_condition, d.go, d.go_condition
                );
            }
        }
        s
    }
}

/// A report without a chart: its stem from the results, its Markdown from its renderer.
macro_rules! plain_report {
    ($t:ty, $stem:expr, $markdown:path) => {
        impl Report for $t {
            stamped!();
            fn stem(&self) -> String {
                let stem: fn(&$t) -> String = $stem;
                stem(self)
            }
            fn render(&self, _: Option<&Path>) -> anyhow::Result<String> {
                Ok($markdown(self))
            }
        }
    };
}

plain_report!(
    memory::MemoryRun,
    |b| format!("memory-{}c-{}b", b.clusters, b.bindings),
    memory::markdown
);
plain_report!(
    faults::FaultBench,
    |b| format!("faults-{}k-{}b", b.kills, b.bindings),
    faults::markdown
);
plain_report!(
    overcommit::OvercommitBench,
    |b| format!("overcommit-{}m", b.members),
    overcommit::markdown
);
plain_report!(
    desched::DeschedBench,
    |b| format!("descheduler-{}c-{}b", b.clusters, b.bindings),
    desched::markdown
);
plain_report!(whole::WholeBench, whole::stem, whole::markdown);

impl Report for estload::EstBench {
    stamped!();
    fn stem(&self) -> String {
        format!("estimators-{}ms", self.latency_ms)
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        let png = format!("{}.png", self.stem());
        let points: Vec<chart::Point> = self.scales.iter().map(estload::chart_point).collect();
        let step = out
            .map(|o| chart::draw(&o.join(&png), &points))
            .transpose()?;
        Ok(estload::markdown(self, step.map(|s| (png.as_str(), s))))
    }
}

impl Report for growth::Growth {
    fn stamp(&mut self, _: Stamp) {}
    fn stem(&self) -> String {
        "growth".into()
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        if let Some(o) = out {
            growth::draw(&o.join("growth.png"), self)?;
        }
        Ok(growth::markdown(self, "growth.png"))
    }
}

impl Report for churn::ChurnRun {
    stamped!();
    fn stem(&self) -> String {
        let faults = if self.faults_enabled { "-faults" } else { "" };
        format!("churn-{}m{faults}", self.minutes)
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        let png = format!("{}.png", self.stem());
        let chart = out.map(|o| churn::chart(&o.join(&png), self)).transpose()?;
        let chart = chart.as_ref();
        Ok(churn::markdown(
            self,
            chart.map(|(axes, step)| (png.as_str(), axes.as_slice(), *step)),
        ))
    }
}

/// What a command line asks for: a `--*-only` flag, else the scenario whose results
/// `--from-results` names (by the file name's prefix), else the side-by-side run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Run,
    Memory,
    Faults,
    Overcommit,
    Descheduler,
    Estimators,
    Growth,
    Churn,
    Whole,
}

/// Each scenario's results file prefix.
const PREFIXES: [(Kind, &str); 9] = [
    (Kind::Run, "results-"),
    (Kind::Memory, "memory-"),
    (Kind::Faults, "faults-"),
    (Kind::Overcommit, "overcommit-"),
    (Kind::Descheduler, "descheduler-"),
    (Kind::Estimators, "estimators-"),
    (Kind::Growth, "growth"),
    (Kind::Churn, "churn-"),
    (Kind::Whole, "whole-karmada-"),
];

fn kind(cli: &Cli) -> Kind {
    let flags = [
        (cli.memory_only, Kind::Memory),
        (cli.faults_only, Kind::Faults),
        (cli.overcommit_only, Kind::Overcommit),
        (cli.descheduler_only, Kind::Descheduler),
        (cli.estimators_only, Kind::Estimators),
        (!cli.growth_from.is_empty(), Kind::Growth),
        (cli.churn_only, Kind::Churn),
        (cli.whole_karmada_only, Kind::Whole),
    ];
    if let Some((_, s)) = flags.iter().find(|(on, _)| *on) {
        return *s;
    }
    let file = cli.from_results.as_ref().and_then(|p| p.file_name());
    let file = file
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_default();
    PREFIXES
        .iter()
        .find(|(_, p)| file.starts_with(p))
        .map_or(Kind::Run, |(s, _)| *s)
}

/// The engine: run the scenario (or read its results), stamp, render, print and write.
async fn engine<R, F>(cli: &Cli, root: &Path, started: Stamp, run: F) -> anyhow::Result<()>
where
    R: Report,
    F: Future<Output = anyhow::Result<R>>,
{
    let r: R = match &cli.from_results {
        Some(path) => read_results(path)?,
        None => {
            let mut r = run.await?;
            r.stamp(started);
            r
        }
    };
    // A re-rendering goes beside its results unless told otherwise.
    let beside = cli.from_results.as_ref().and_then(|p| p.parent());
    let out = (cli.out_dir.clone())
        .or_else(|| beside.map(Path::to_path_buf))
        .unwrap_or_else(|| root.join("docs/bench"));
    if !cli.no_write {
        std::fs::create_dir_all(&out)?;
    }
    let json = out.join(format!("{}.json", r.json_stem()));
    // A re-rendering leaves the results as they were.
    if !cli.no_write && cli.from_results.is_none() {
        std::fs::write(&json, serde_json::to_string_pretty(&r)? + "\n")
            .with_context(|| format!("writing {}", json.display()))?;
    }
    let md = r.render((!cli.no_write).then_some(out.as_path()))?;
    println!("\n{}", r.console(&md));
    if !cli.no_write {
        let md_path = out.join(format!("{}.md", r.stem()));
        std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
        println!("wrote {} and {}", md_path.display(), json.display());
    }
    Ok(())
}

/// Results already in `dir` (one per scale), plus `run`, ordered by scale.
fn all_runs(dir: &Path, run: &Run) -> Vec<Run> {
    let mut runs: Vec<Run> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.starts_with("results-") && n.ends_with(".json")
        })
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .filter(|r: &Run| !(r.clusters == run.clusters && r.bindings == run.bindings))
        .collect();
    runs.push(run.clone());
    runs.sort_by_key(|r| (r.clusters, r.bindings));
    runs
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let root = testenv::repo_root();
    let started = stamp(&root);
    let sc = scenario(&cli, kind(&cli), &root);
    let (c, r, s) = (&cli, root.as_path(), started);
    match kind(&cli) {
        Kind::Faults => engine(c, r, s, faults::run(&sc)).await,
        Kind::Overcommit => engine(c, r, s, overcommit::run(&sc)).await,
        Kind::Descheduler => engine(c, r, s, desched::run(&sc)).await,
        Kind::Growth => engine(c, r, s, async { growth::collect(&cli.growth_from) }).await,
        Kind::Estimators => engine(c, r, s, estload::run(&sc)).await,
        Kind::Churn => engine(c, r, s, churn::run(&sc)).await,
        Kind::Whole => {
            let f = whole::WholeFlags {
                deployments: cli.whole_deployments,
                rounds: cli.whole_rounds.clone(),
                rate: cli.whole_rate,
                concurrency: sc.create_concurrency,
                timeout: sc.settle_timeout,
                state_dir: cli.whole_state_dir.clone(),
                scheduler: sc.bins.scheduler.clone(),
                descheduler: sc.bins.descheduler.clone(),
            };
            engine(c, r, s, whole::run(&f)).await
        }
        Kind::Memory => engine(c, r, s, memory::run(&sc)).await,
        Kind::Run => engine(c, r, s, run::run(&sc)).await,
    }
}

/// The table of scenarios: the command line as one scenario's plain data; the kinds differ
/// only where their own flags say.
fn scenario(cli: &Cli, kind: Kind, root: &Path) -> scenario::Scenario {
    use scenario::*;
    let (secs, ms) = (Duration::from_secs, Duration::from_millis);
    let bin = |flag: &Option<PathBuf>, default: &str| flag.clone().unwrap_or(root.join(default));
    let mut sc = Scenario {
        workload: Workload {
            clusters: cli.clusters,
            bindings: cli.bindings,
            seed: cli.seed,
            stream: cli.stream_count,
            alone: cli.est_alone,
            scales: cli.est_scales.clone(),
            minutes: cli.churn_minutes,
            live: cli.churn_live,
            rate: cli.churn_rate,
            scale_rate: cli.churn_scale_rate,
        },
        estimators: Estimators {
            members: cli.estimator,
            real_max: cli.est_real_max,
            latency: ms(cli.est_latency_ms),
        },
        faults: Faults {
            estimator_rows: !cli.est_no_faults,
            estimator_row_bindings: cli.est_fault_bindings,
            api_kills: cli.churn_faults,
            api_kill_every: secs(cli.churn_fault_every.max(10)),
        },
        samples: Samples {
            every: secs(cli.churn_sample_seconds.max(1)),
            perf: cli.perf,
            cap: secs(cli.memory_cap),
        },
        ceiling: Ceiling {
            concurrency: [16, 64],
            seconds: 6,
        },
        flags: CommonFlags {
            qps: cli.kube_api_qps,
            burst: cli.kube_api_burst,
            estimator: cli.estimator > 0,
            extra: cli.sched_flags.clone(),
        },
        bins: Bins {
            scheduler: bin(&cli.rust_bin, "target/release/karmada-scheduler"),
            descheduler: bin(&cli.rust_desched_bin, "target/release/karmada-descheduler"),
            go: cli.go_bin.clone(),
            oracle: bin(&cli.oracle_bin, "_output/bin/karmada-oracle"),
            scratch_dir: root.join("target/tmp/bench"),
        },
        create_concurrency: cli.create_concurrency,
        settle_timeout: secs(cli.settle_timeout),
    };
    match kind {
        Kind::Descheduler => {
            sc.workload.clusters = cli.desched_clusters;
            sc.workload.bindings = cli.desched_bindings;
        }
        Kind::Estimators => sc.workload.bindings = cli.est_bindings,
        Kind::Churn => sc.estimators.members = cli.churn_members,
        Kind::Overcommit => sc.estimators.members = cli.overcommit_members,
        _ => {}
    }
    sc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report of a results file, by the scenario its name gives.
    fn render_file(path: &Path, out: &Path) -> anyhow::Result<(String, String)> {
        fn one<R: Report>(path: &Path, out: &Path) -> anyhow::Result<(String, String)> {
            let r: R = read_results(path)?;
            Ok((r.stem(), r.render(Some(out))?))
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let kind = PREFIXES.iter().find(|(_, p)| name.starts_with(p));
        match kind.map(|(s, _)| *s).unwrap_or(Kind::Run) {
            Kind::Run => one::<Run>(path, out),
            Kind::Memory => one::<memory::MemoryRun>(path, out),
            Kind::Faults => one::<faults::FaultBench>(path, out),
            Kind::Overcommit => one::<overcommit::OvercommitBench>(path, out),
            Kind::Descheduler => one::<desched::DeschedBench>(path, out),
            Kind::Estimators => one::<estload::EstBench>(path, out),
            Kind::Growth => one::<growth::Growth>(path, out),
            Kind::Churn => one::<churn::ChurnRun>(path, out),
            Kind::Whole => one::<whole::WholeBench>(path, out),
        }
    }

    /// Results under docs/bench whose committed report an older wording of the renderer
    /// wrote, or that was annotated by hand afterwards: they must still render.
    const OLDER: &[&str] = &[
        "estimators-1ms.json",
        "results-1000c-200b.json",
        "scale/estimators-1ms.json",
    ];

    /// `--from-results` on every committed results file renders the committed report byte for
    /// byte (but for the older ones above), and the report of every scenario is among them.
    #[test]
    fn committed_results_render_to_their_reports() {
        let docs = testenv::repo_root().join("docs/bench");
        let mut files = vec![];
        let mut dirs = vec![docs.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "json") {
                    files.push(p);
                }
            }
        }
        let mut same = std::collections::BTreeSet::new();
        for f in files {
            let out = tempfile::tempdir().unwrap();
            // The side-by-side report lists every scale with results beside it.
            for e in std::fs::read_dir(f.parent().unwrap()).unwrap().flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if n.starts_with("results-") {
                    std::fs::copy(e.path(), out.path().join(&n)).unwrap();
                }
            }
            let (stem, md) =
                render_file(&f, out.path()).unwrap_or_else(|e| panic!("{}: {e:#}", f.display()));
            let rel = f.strip_prefix(&docs).unwrap().to_string_lossy().to_string();
            if OLDER.contains(&rel.as_str()) {
                continue;
            }
            let report = f.with_file_name(format!("{stem}.md"));
            let committed = std::fs::read_to_string(&report).unwrap();
            assert!(
                md == committed,
                "{} differs from {rel} rendered",
                report.display()
            );
            same.insert(stem.split('-').next().unwrap().to_string());
        }
        // report (results), memory, faults, overcommit, descheduler, estimators, growth, churn
        assert!(same.len() >= 8, "{same:?}");
    }
}
