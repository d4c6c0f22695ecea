//! `karmada-bench`: this karmada-scheduler and the Go v1.18.2 one, side by side on one
//! kube-apiserver — placement agreement, throughput, latency, algorithm time and memory.
//! Normally run through `hack/bench.sh`, which builds everything first.

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
mod procs;
mod promtext;
mod replay;
mod report;
mod results;
mod rng;
mod run;
mod stats;
mod whole;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;

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
    /// Seconds per ceiling measurement.
    #[arg(long, default_value_t = 6)]
    ceiling_seconds: u64,
    /// Requests in flight tried for the ceiling (comma separated).
    #[arg(long, default_value = "16,64", value_delimiter = ',')]
    ceiling_concurrency: Vec<usize>,
    /// Bindings created at a steady pace after the load, to measure latency without a backlog.
    #[arg(long, default_value_t = 200)]
    stream_count: usize,
    /// Their total creations/s (0: half the slower scheduler's steady load rate, so each gets a
    /// quarter of what the slower one sustains).
    #[arg(long, default_value_t = 0.0)]
    stream_rate: f64,
    /// Bindings each scheduler schedules alone, the other idle, after the mirrors (capped at
    /// `--bindings`; 0 skips the phase). The PATCH-ceiling target uses this phase.
    #[arg(long, default_value_t = 1000)]
    solo_count: usize,
    /// Fraction of workload pairs whose replicas change in the churn phase.
    #[arg(long, default_value_t = 0.2)]
    scale_fraction: f64,
    /// Fraction of clusters tainted in the churn phase.
    #[arg(long, default_value_t = 0.1)]
    taint_fraction: f64,
    /// Fraction of clusters deleted in the churn phase.
    #[arg(long, default_value_t = 0.05)]
    delete_fraction: f64,
    /// Give up waiting for a phase after this many seconds.
    #[arg(long, default_value_t = 900)]
    settle_timeout: u64,
    /// No write for this long (ms) means settled.
    #[arg(long, default_value_t = 2000)]
    quiet_ms: u64,
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
    /// Skip the replay ceiling (the Rust solo batch's writes written again by a bare client).
    #[arg(long)]
    no_replay_ceiling: bool,
    /// Record `perf` profiles of the Rust scheduler and the apiserver during the load phase.
    #[arg(long)]
    perf: bool,
    /// Where the report, JSON results and chart go.
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
    /// Fault bench only: the fault suite's scenario (API server kills and pauses, a faulty
    /// network, the scheduler killed between its writes) against each scheduler in turn;
    /// writes `faults-<K>k-<B>b.md` and `.json` with the bindings each left incomplete.
    #[arg(long)]
    faults_only: bool,
    /// `--faults-only`: API server SIGKILL + restart cycles.
    #[arg(long, default_value_t = 10)]
    fault_kills: usize,
    /// `--faults-only`: API server SIGSTOP + SIGCONT cycles.
    #[arg(long, default_value_t = 2)]
    fault_pauses: usize,
    /// `--faults-only`: bindings in the stream.
    #[arg(long, default_value_t = 100)]
    fault_bindings: usize,
    /// `--faults-only`: seconds the stream (and its faults) lasts.
    #[arg(long, default_value_t = 60)]
    fault_stream_seconds: u64,
    /// Descheduler bench only: one pass of the Go karmada-descheduler and of ours over
    /// `--desched-bindings` × `--desched-clusters` with a stub estimator; writes
    /// `descheduler-<C>c-<B>b.md` and `.json`.
    #[arg(long)]
    descheduler_only: bool,
    /// `--descheduler-only`: bindings.
    #[arg(long, default_value_t = 1000)]
    desched_bindings: usize,
    /// `--descheduler-only`: clusters (each binding targets all of them).
    #[arg(long, default_value_t = 10)]
    desched_clusters: usize,
    /// `--descheduler-only`: the stub estimator's latency per call, in milliseconds.
    #[arg(long, default_value_t = 1)]
    desched_latency_ms: u64,
    /// `--descheduler-only` and `--whole-karmada-only`: our karmada-descheduler binary.
    #[arg(long)]
    rust_desched_bin: Option<PathBuf>,
    /// `--descheduler-only`: the Go karmada-descheduler binary (default: _output/bin).
    #[arg(long)]
    go_desched_bin: Option<PathBuf>,
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
    /// `--churn-only`: SIGKILL and restart the API server periodically (the soak's faults).
    #[arg(long)]
    churn_faults: bool,
    /// `--churn-faults`: seconds between API server kills.
    #[arg(long, default_value_t = 300)]
    churn_fault_every: u64,
    /// `--churn-faults`: seconds the API server stays down.
    #[arg(long, default_value_t = 2)]
    churn_fault_down: u64,
    /// `--churn-only`: seconds to wait after the stream for every live binding to settle.
    #[arg(long, default_value_t = 180)]
    churn_settle: u64,
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
    /// Do not run: read these results (a `results-*.json`, or with `--estimators-only` an
    /// `estimators-*.json`, with `--churn-only` a `churn-*.json`, written earlier) and write their
    /// report and the chart again, e.g. after the report's wording changed.
    #[arg(long)]
    from_results: Option<PathBuf>,
    /// Print only; write nothing under the output directory.
    #[arg(long)]
    no_write: bool,
}

fn sh(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    format!(
        "{} CPUs ({cpu}), {}",
        sh("nproc", &[]),
        sh("uname", &["-sr"])
    )
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(value)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
}

/// `<stem>.md` and `<stem>.json` in the output directory (`--out-dir`, default docs/bench).
fn write_report(
    cli: &Cli,
    root: &Path,
    stem: &str,
    value: &impl serde::Serialize,
    md: &str,
) -> anyhow::Result<()> {
    let out = out_dir(cli, root);
    std::fs::create_dir_all(&out)?;
    let json_path = out.join(format!("{stem}.json"));
    write_json(&json_path, value)?;
    let md_path = out.join(format!("{stem}.md"));
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    println!("wrote {} and {}", md_path.display(), json_path.display());
    Ok(())
}

/// When a run began, where, and from which commit (`-dirty` when tracked files differed).
#[derive(Clone)]
struct Stamp {
    date: String,
    machine: String,
    git_commit: String,
}

fn stamp(root: &Path) -> Stamp {
    Stamp {
        date: sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine: machine(),
        git_commit: git_commit(root),
    }
}

/// The output directory: `--out-dir`, else docs/bench.
fn out_dir(cli: &Cli, root: &Path) -> PathBuf {
    cli.out_dir
        .clone()
        .unwrap_or_else(|| root.join("docs/bench"))
}

/// Results written by an earlier run (`--from-results`).
pub(crate) fn read_results<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("decoding {}", path.display()))
}

/// One descheduling pass of each side (`--descheduler-only`).
async fn run_desched(cli: &Cli, root: &Path) -> anyhow::Result<desched::DeschedBench> {
    desched::run(&desched::DeschedFlags {
        bindings: cli.desched_bindings,
        clusters: cli.desched_clusters,
        latency: Duration::from_millis(cli.desched_latency_ms),
        create_concurrency: cli.create_concurrency,
        rust_bin: cli
            .rust_desched_bin
            .clone()
            .unwrap_or_else(|| root.join("target/release/karmada-descheduler")),
        go_bin: cli.go_desched_bin.clone(),
        timeout: Duration::from_secs(cli.settle_timeout),
    })
    .await
}

/// Print a report and, unless `--no-write`, write it with its JSON as `<stem>.md/.json`.
fn publish(
    cli: &Cli,
    root: &Path,
    stem: &str,
    value: &impl serde::Serialize,
    md: &str,
) -> anyhow::Result<()> {
    println!("\n{md}");
    if !cli.no_write {
        write_report(cli, root, stem, value, md)?;
    }
    Ok(())
}

fn git_commit(root: &Path) -> String {
    sh(
        "git",
        &[
            "-C",
            &root.to_string_lossy(),
            "describe",
            "--always",
            "--dirty",
            "--abbrev=7",
        ],
    )
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
    // Taken before the run: the tree may change while a long run goes on, and the report
    // must name the commit of the binaries it measured and when it began.
    let started = stamp(&root);
    let cfg = run::Config {
        clusters: cli.clusters,
        bindings: cli.bindings,
        seed: cli.seed,
        flags: CommonFlags {
            qps: cli.kube_api_qps,
            burst: cli.kube_api_burst,
            estimator: cli.estimator > 0,
            extra: cli.sched_flags.clone(),
        },
        estimator_members: cli.estimator,
        create_concurrency: cli.create_concurrency,
        ceiling_seconds: cli.ceiling_seconds,
        ceiling_concurrency: cli.ceiling_concurrency.clone(),
        scale_fraction: cli.scale_fraction,
        taint_fraction: cli.taint_fraction,
        delete_fraction: cli.delete_fraction,
        settle_timeout: Duration::from_secs(cli.settle_timeout),
        quiet: Duration::from_millis(cli.quiet_ms),
        rust_bin: cli
            .rust_bin
            .clone()
            .unwrap_or_else(|| root.join("target/release/karmada-scheduler")),
        go_bin: cli.go_bin.clone(),
        oracle_bin: cli
            .oracle_bin
            .clone()
            .unwrap_or_else(|| root.join("_output/bin/karmada-oracle")),
        scratch_dir: root.join("target/tmp/bench"),
        replay_ceiling: !cli.no_replay_ceiling,
        perf: cli.perf,
        stream_count: cli.stream_count,
        stream_rate: cli.stream_rate,
        solo_count: cli.solo_count,
    };
    if cli.faults_only {
        let mut b = faults::run(&faults::FaultFlags {
            seed: cli.seed,
            bindings: cli.fault_bindings,
            kills: cli.fault_kills,
            pauses: cli.fault_pauses,
            stream: Duration::from_secs(cli.fault_stream_seconds),
            rust_bin: cfg.rust_bin.clone(),
            go_bin: cfg.go_bin.clone(),
        })
        .await?;
        let st = started.clone();
        (b.date, b.machine, b.git_commit) = (st.date, st.machine, st.git_commit);
        let md = faults::markdown(&b);
        publish(
            &cli,
            &root,
            &format!("faults-{}k-{}b", b.kills, b.bindings),
            &b,
            &md,
        )?;
        return Ok(());
    }
    if cli.overcommit_only {
        let mut b = overcommit::run(&overcommit::OvercommitFlags {
            members: cli.overcommit_members,
            demand_factor: 2,
            rust_bin: cfg.rust_bin.clone(),
            go_bin: cfg.go_bin.clone(),
        })
        .await?;
        let st = started.clone();
        (b.date, b.machine, b.git_commit) = (st.date, st.machine, st.git_commit);
        let md = overcommit::markdown(&b);
        publish(&cli, &root, &format!("overcommit-{}m", b.members), &b, &md)?;
        return Ok(());
    }
    if cli.descheduler_only {
        let b: desched::DeschedBench = match &cli.from_results {
            // The report again from an earlier run's results.
            Some(path) => read_results(path)?,
            None => {
                let mut b = run_desched(&cli, &root).await?;
                let st = started.clone();
                (b.date, b.machine, b.git_commit) = (st.date, st.machine, st.git_commit);
                b
            }
        };
        let md = desched::markdown(&b);
        publish(
            &cli,
            &root,
            &format!("descheduler-{}c-{}b", b.clusters, b.bindings),
            &b,
            &md,
        )?;
        return Ok(());
    }
    if !cli.growth_from.is_empty() {
        let g = growth::collect(&cli.growth_from)?;
        let out = out_dir(&cli, &root);
        if !cli.no_write {
            std::fs::create_dir_all(&out)?;
            growth::draw(&out.join("growth.png"), &g)?;
        }
        let md = growth::markdown(&g, "growth.png");
        publish(&cli, &root, "growth", &g, &md)?;
        return Ok(());
    }
    if cli.estimators_only {
        let b: estload::EstBench = match &cli.from_results {
            Some(path) => read_results(path)?,
            None => {
                let mut b = estload::run(
                    &cfg,
                    &estload::EstFlags {
                        scales: cli.est_scales.clone(),
                        bindings: cli.est_bindings,
                        alone: cli.est_alone,
                        real_max: cli.est_real_max,
                        latency: Duration::from_millis(cli.est_latency_ms),
                        faults: !cli.est_no_faults,
                        fault_bindings: cli.est_fault_bindings,
                    },
                )
                .await?;
                let st = started.clone();
                (b.date, b.machine, b.git_commit) = (st.date, st.machine, st.git_commit);
                b
            }
        };
        let stem = format!("estimators-{}ms", cli.est_latency_ms);
        let out = out_dir(&cli, &root);
        let chart = if cli.no_write {
            None
        } else {
            std::fs::create_dir_all(&out)?;
            let points: Vec<chart::Point> = b.scales.iter().map(estload::chart_point).collect();
            Some(chart::draw(&out.join(format!("{stem}.png")), &points)?)
        };
        let png = format!("{stem}.png");
        let md = estload::markdown(&b, chart.map(|step| (png.as_str(), step)));
        publish(&cli, &root, &stem, &b, &md)?;
        return Ok(());
    }
    if cli.churn_only {
        let b: churn::ChurnRun = match &cli.from_results {
            Some(path) => read_results(path)?,
            None => {
                let mut b = churn::run(
                    &cfg,
                    &churn::ChurnFlags {
                        minutes: cli.churn_minutes,
                        live: cli.churn_live,
                        rate: cli.churn_rate,
                        scale_rate: cli.churn_scale_rate,
                        sample: Duration::from_secs(cli.churn_sample_seconds.max(1)),
                        members: cli.churn_members,
                        faults: cli.churn_faults,
                        fault_every: Duration::from_secs(cli.churn_fault_every.max(10)),
                        fault_down: Duration::from_secs(cli.churn_fault_down),
                        settle: Duration::from_secs(cli.churn_settle),
                    },
                )
                .await?;
                let st = started.clone();
                (b.date, b.machine, b.git_commit) = (st.date, st.machine, st.git_commit);
                b
            }
        };
        let stem = format!(
            "churn-{}m{}",
            b.minutes,
            if b.faults_enabled { "-faults" } else { "" }
        );
        let png = format!("{stem}.png");
        let chart = if cli.no_write {
            None
        } else {
            let out = out_dir(&cli, &root);
            std::fs::create_dir_all(&out)?;
            Some(churn::chart(&out.join(&png), &b)?)
        };
        let md = churn::markdown(
            &b,
            chart
                .as_ref()
                .map(|(axes, step)| (png.as_str(), axes.as_slice(), *step)),
        );
        publish(&cli, &root, &stem, &b, &md)?;
        return Ok(());
    }
    if cli.whole_karmada_only {
        let b: whole::WholeBench = match &cli.from_results {
            Some(path) => read_results(path)?,
            None => {
                let mut b = whole::run(&whole::WholeFlags {
                    deployments: cli.whole_deployments,
                    rounds: cli.whole_rounds.clone(),
                    rate: cli.whole_rate,
                    concurrency: cli.create_concurrency,
                    timeout: Duration::from_secs(cli.settle_timeout),
                    state_dir: cli.whole_state_dir.clone(),
                    scheduler: cfg.rust_bin.clone(),
                    descheduler: cli
                        .rust_desched_bin
                        .clone()
                        .unwrap_or_else(|| root.join("target/release/karmada-descheduler")),
                })
                .await?;
                let st = started.clone();
                (b.date, b.machine, b.git_commit) = (st.date, st.machine, st.git_commit);
                b
            }
        };
        let md = whole::markdown(&b);
        publish(&cli, &root, &whole::stem(&b), &b, &md)?;
        return Ok(());
    }
    if cli.memory_only {
        let mut m = memory::run(&cfg, Duration::from_secs(cli.memory_cap)).await?;
        let st = started.clone();
        (m.date, m.machine, m.git_commit) = (st.date, st.machine, st.git_commit);
        let md = memory::markdown(&m);
        publish(
            &cli,
            &root,
            &format!("memory-{}c-{}b", m.clusters, m.bindings),
            &m,
            &md,
        )?;
        return Ok(());
    }
    let result = match &cli.from_results {
        Some(path) => read_results(path)?,
        None => {
            let mut result = run::run(&cfg).await?;
            let st = started.clone();
            (result.date, result.machine, result.git_commit) = (st.date, st.machine, st.git_commit);
            result
        }
    };

    println!("\n{}", report::targets(&result));
    println!("{}", report::figures(&result));
    for (title, a) in [
        ("fresh", &result.agreement_fresh),
        ("after churn", &result.agreement_after_churn),
    ] {
        println!(
            "agreement ({title}): {}/{} = {:.2}%",
            a.agree,
            a.pairs,
            a.ratio() * 100.0
        );
        for d in &a.disagreements {
            println!(
                "  {} [{}]\n    rust: {}  ({})\n    go:   {}  ({})",
                d.binding, d.strategy, d.rust, d.rust_condition, d.go, d.go_condition
            );
        }
    }
    if cli.no_write {
        return Ok(());
    }
    let out = out_dir(&cli, &root);
    std::fs::create_dir_all(&out)?;
    let tag = format!("{}c-{}b", result.clusters, result.bindings);
    let json_path = out.join(format!("results-{tag}.json"));
    if cli.from_results.is_none() {
        write_json(&json_path, &result)?;
    }
    let runs = all_runs(&out, &result);
    let points: Vec<chart::Point> = runs.iter().map(chart::Point::of).collect();
    let scales: Vec<String> = runs
        .iter()
        .map(|r| format!("{} clusters × {} bindings", r.clusters, r.bindings))
        .collect();
    let chart_path = out.join("chart.png");
    let step = chart::draw(&chart_path, &points)?;
    let md = report::markdown(&result, "chart.png", step, &scales);
    let md_path = out.join(format!("report-{tag}.md"));
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    println!(
        "\nwrote {}, {} and {}",
        md_path.display(),
        json_path.display(),
        chart_path.display()
    );
    Ok(())
}
