//! The command line: one subcommand per scenario, each with its own flags, and the flags every
//! scenario shares (the binaries, the output directory) given before or after it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::procs::CommonFlags;
use crate::scenario::{Bins, Ceiling, Estimators, Faults, Samples, Scenario, Workload};

/// Side-by-side benchmark of the Rust and Go karmada-schedulers.
#[derive(Parser, Debug)]
#[command(name = "karmada-bench")]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// What every subcommand accepts.
#[derive(Args, Debug)]
pub struct Global {
    /// The Rust scheduler binary.
    #[arg(long, global = true)]
    pub rust_bin: Option<PathBuf>,
    /// Our karmada-descheduler binary (`descheduler`, `whole`).
    #[arg(long, global = true)]
    pub rust_desched_bin: Option<PathBuf>,
    /// The Go scheduler binary (default: _output/bin/karmada-scheduler).
    #[arg(long, global = true)]
    pub go_bin: Option<PathBuf>,
    /// The upstream scheduler driven offline (hack/build-oracle.sh), used to replay the
    /// history of pairs that disagree after churn (default: _output/bin/karmada-oracle).
    #[arg(long, global = true)]
    pub oracle_bin: Option<PathBuf>,
    /// Where the report, JSON results and chart go (default docs/bench; with `render`,
    /// beside the results).
    #[arg(long, global = true)]
    pub out_dir: Option<PathBuf>,
    /// Print only; write nothing under the output directory.
    #[arg(long, global = true)]
    pub no_write: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Both schedulers side by side on one kube-apiserver: load, mirrors and agreement, solo,
    /// stream, churn, history replay; writes `report-<C>c-<B>b.md`, `results-…json` and
    /// `chart.png`. With `--phases memory`, `memory-<C>c-<B>b.md` and `.json`.
    Run(RunArgs),
    /// The fault suite's scenario (10 API server kills, 2 pauses, a faulty network, the
    /// scheduler killed between its writes; a 60 s stream of 100 bindings) against each
    /// scheduler in turn; writes `faults-<K>k-<B>b.md` and `.json`.
    Faults(Common),
    /// A burst of Divided bindings twice the room of the members' nodes, ours at 1 and 16
    /// workers and Go, `SchedulingOvercommitProtection` off and on; writes
    /// `overcommit-<M>m.md` and `.json`.
    Overcommit(OvercommitArgs),
    /// One pass of the Go karmada-descheduler and of ours over `--desched-bindings` ×
    /// `--desched-clusters`
    /// with a stub estimator answering after 1 ms; writes `descheduler-<C>c-<B>b.md` and
    /// `.json`.
    Descheduler(DeschedArgs),
    /// The accurate estimators on, each cluster's behind an `ExternalName` Service, at each
    /// of `--est-scales` (one control plane each): together, each alone, fault rows at the
    /// largest stub scale; writes `estimators-<L>ms.md`, `.json` and `.png`.
    Estimators(EstArgs),
    /// Churn (soak): ours and Go side by side with real Go estimators under steady creations,
    /// scale changes and deletions; RSS, FDs, threads, queue depth, tasks and estimator
    /// connections sampled; writes `churn-<M>m[-faults].md`, `.json` and `.png`.
    Churn(ChurnArgs),
    /// End to end in one whole Karmada (`hack/karmada-up.sh`): Deployments with a policy each
    /// until every member holds what its binding says, once per `--whole-rounds` entry (scheduler
    /// and descheduler swapped between rounds); writes `whole-karmada-<N>d[-cm-qps<Q>].md`
    /// and `.json`.
    Whole(WholeArgs),
    /// Do not run: write the reports of these results again (the JSON an earlier run wrote),
    /// e.g. after the wording changed; with `--growth`, the growth of CPU per binding and
    /// peak RSS against clusters from `estimators` results (`growth.md` and `.png`).
    Render(RenderArgs),
}

/// The flags of every scenario that runs schedulers on a control plane.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `--kube-api-qps` of both schedulers (high by default so that the client limiter is not
    /// what is measured).
    #[arg(long, default_value_t = 5000.0)]
    pub kube_api_qps: f64,
    /// `--kube-api-burst` of both schedulers.
    #[arg(long, default_value_t = 10000)]
    pub kube_api_burst: u32,
    /// Extra flag given to both schedulers (repeatable), e.g. `--sched-flag=--feature-gates=WorkloadAffinity=true`.
    #[arg(long = "sched-flag", allow_hyphen_values = true)]
    pub sched_flags: Vec<String>,
    /// Requests in flight while creating objects.
    #[arg(long, default_value_t = 32)]
    pub create_concurrency: usize,
    /// Give up waiting for a phase after this many seconds.
    #[arg(long, default_value_t = 900)]
    pub settle_timeout: u64,
}

/// What of the side-by-side run is done.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Phases {
    /// Every phase.
    All,
    /// The originals only (no mirrors, stream or churn), both schedulers' RSS sampled until
    /// both halves are placed or `--memory-cap` expires: memory at a scale where the full
    /// run would take hours.
    Memory,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: Common,
    /// Number of Cluster objects.
    #[arg(long, default_value_t = 10)]
    pub clusters: usize,
    /// Number of bindings (half for each scheduler; each is mirrored to the other later).
    #[arg(long, default_value_t = 1000)]
    pub bindings: usize,
    /// Enable the accurate estimator in both schedulers, against this many real members with
    /// Go estimators (0 = estimator disabled).
    #[arg(long, default_value_t = 0)]
    pub estimator: usize,
    /// Bindings created at a steady pace after the load, to measure latency without a backlog.
    #[arg(long, default_value_t = 200)]
    pub stream_count: usize,
    /// Record `perf` profiles of the Rust scheduler and the apiserver during the load phase.
    #[arg(long)]
    pub perf: bool,
    /// Which phases run.
    #[arg(long, value_enum, default_value_t = Phases::All)]
    pub phases: Phases,
    /// `--phases memory`: seconds after which the run stops even if the Go half is not placed
    /// (its peak so far is then a lower bound).
    #[arg(long, default_value_t = 1800)]
    pub memory_cap: u64,
}

#[derive(Args, Debug)]
pub struct OvercommitArgs {
    #[command(flatten)]
    pub common: Common,
    /// Member clusters (with real Go estimators).
    #[arg(long = "overcommit-members", default_value_t = 2)]
    pub members: usize,
}

#[derive(Args, Debug)]
pub struct DeschedArgs {
    #[command(flatten)]
    pub common: Common,
    /// Bindings.
    #[arg(long = "desched-bindings", default_value_t = 1000)]
    pub bindings: usize,
    /// Clusters (each binding targets all of them).
    #[arg(long = "desched-clusters", default_value_t = 10)]
    pub clusters: usize,
}

#[derive(Args, Debug)]
pub struct EstArgs {
    #[command(flatten)]
    pub common: Common,
    /// Cluster counts (comma separated).
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',')]
    pub est_scales: Vec<usize>,
    /// Bindings of the together phase (half for each scheduler).
    #[arg(long, default_value_t = 200)]
    pub est_bindings: usize,
    /// Bindings each scheduler schedules alone (the same for both).
    #[arg(long, default_value_t = 100)]
    pub est_alone: usize,
    /// Scales up to this many clusters use real Go estimators (members of the control
    /// plane); larger ones the bench's stub.
    #[arg(long, default_value_t = 10)]
    pub est_real_max: usize,
    /// The stub's latency per call, in milliseconds.
    #[arg(long, default_value_t = 1)]
    pub est_latency_ms: u64,
    /// Skip the fault rows.
    #[arg(long)]
    pub est_no_faults: bool,
    /// Divided bindings per scheduler per fault row.
    #[arg(long, default_value_t = 20)]
    pub est_fault_bindings: usize,
    /// Record a `perf` profile of the Rust scheduler's alone batch.
    #[arg(long)]
    pub perf: bool,
}

#[derive(Args, Debug)]
pub struct ChurnArgs {
    #[command(flatten)]
    pub common: Common,
    /// Minutes the stream lasts.
    #[arg(long, default_value_t = 60.0)]
    pub churn_minutes: f64,
    /// Bindings alive at once (both schedulers; half each).
    #[arg(long, default_value_t = 300)]
    pub churn_live: usize,
    /// Creations per second (both schedulers); deletions follow at the same rate once
    /// `--churn-live` is reached.
    #[arg(long, default_value_t = 15.0)]
    pub churn_rate: f64,
    /// Scale changes per second (both schedulers).
    #[arg(long, default_value_t = 7.0)]
    pub churn_scale_rate: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 15)]
    pub churn_sample_seconds: u64,
    /// Member clusters, each with a real Go estimator.
    #[arg(long, default_value_t = 3)]
    pub churn_members: usize,
    /// SIGKILL and restart the API server periodically (down 2 s each time).
    #[arg(long)]
    pub churn_faults: bool,
    /// `--churn-faults`: seconds between API server kills.
    #[arg(long, default_value_t = 300)]
    pub churn_fault_every: u64,
}

#[derive(Args, Debug)]
pub struct WholeArgs {
    /// Deployments a round.
    #[arg(long, default_value_t = 100)]
    pub whole_deployments: usize,
    /// The rounds' schedulers in order (`ours`, `go`; comma separated).
    #[arg(long, default_value = "ours,go", value_delimiter = ',')]
    pub whole_rounds: Vec<String>,
    /// Creations a second (0: all at once).
    #[arg(long, default_value_t = 0.0)]
    pub whole_rate: f64,
    /// The state dir of a running whole Karmada to use and leave running (default: start one
    /// in a temporary dir and stop it after).
    #[arg(long)]
    pub whole_state_dir: Option<PathBuf>,
    /// Creations in flight.
    #[arg(long, default_value_t = 32)]
    pub create_concurrency: usize,
    /// Give up on a round after this many seconds.
    #[arg(long, default_value_t = 900)]
    pub settle_timeout: u64,
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Results files (`results-*.json`, `estimators-*.json`, …).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Render the growth against clusters of these `estimators` results (a later file's
    /// scale replaces an earlier one's) instead of each file's own report.
    #[arg(long)]
    pub growth: bool,
}

impl Global {
    pub fn bins(&self, root: &Path) -> Bins {
        let bin =
            |flag: &Option<PathBuf>, default: &str| flag.clone().unwrap_or(root.join(default));
        Bins {
            scheduler: bin(&self.rust_bin, "target/release/karmada-scheduler"),
            descheduler: bin(&self.rust_desched_bin, "target/release/karmada-descheduler"),
            go: self.go_bin.clone(),
            oracle: bin(&self.oracle_bin, "_output/bin/karmada-oracle"),
            scratch_dir: root.join("target/tmp/bench"),
        }
    }

    /// A scenario of `common`'s flags; the subcommand fills in the rest.
    pub fn scenario(&self, common: &Common, root: &Path) -> Scenario {
        Scenario {
            workload: Workload {
                seed: common.seed,
                ..Default::default()
            },
            estimators: Estimators::default(),
            faults: Faults::default(),
            samples: Samples::default(),
            ceiling: Ceiling {
                concurrency: [16, 64],
                seconds: 6,
            },
            flags: CommonFlags {
                qps: common.kube_api_qps,
                burst: common.kube_api_burst,
                estimator: false,
                extra: common.sched_flags.clone(),
            },
            bins: self.bins(root),
            create_concurrency: common.create_concurrency,
            settle_timeout: Duration::from_secs(common.settle_timeout),
        }
    }
}

impl RunArgs {
    pub fn apply(&self, sc: &mut Scenario) {
        (sc.workload.clusters, sc.workload.bindings) = (self.clusters, self.bindings);
        sc.workload.stream = self.stream_count;
        sc.estimators.members = self.estimator;
        sc.flags.estimator = self.estimator > 0;
        sc.samples.perf = self.perf;
        sc.samples.cap = Duration::from_secs(self.memory_cap);
    }
}

impl EstArgs {
    pub fn apply(&self, sc: &mut Scenario) {
        sc.workload.bindings = self.est_bindings;
        sc.workload.alone = self.est_alone;
        sc.workload.scales = self.est_scales.clone();
        sc.estimators.real_max = self.est_real_max;
        sc.estimators.latency = Duration::from_millis(self.est_latency_ms);
        sc.faults.estimator_rows = !self.est_no_faults;
        sc.faults.estimator_row_bindings = self.est_fault_bindings;
        sc.samples.perf = self.perf;
    }
}

impl ChurnArgs {
    pub fn apply(&self, sc: &mut Scenario) {
        let w = &mut sc.workload;
        (w.minutes, w.live) = (self.churn_minutes, self.churn_live);
        (w.rate, w.scale_rate) = (self.churn_rate, self.churn_scale_rate);
        sc.estimators.members = self.churn_members;
        sc.faults.api_kills = self.churn_faults;
        sc.faults.api_kill_every = Duration::from_secs(self.churn_fault_every.max(10));
        sc.samples.every = Duration::from_secs(self.churn_sample_seconds.max(1));
    }
}

impl WholeArgs {
    pub fn flags(&self, bins: &Bins) -> crate::whole::WholeFlags {
        crate::whole::WholeFlags {
            deployments: self.whole_deployments,
            rounds: self.whole_rounds.clone(),
            rate: self.whole_rate,
            concurrency: self.create_concurrency,
            timeout: Duration::from_secs(self.settle_timeout),
            state_dir: self.whole_state_dir.clone(),
            scheduler: bins.scheduler.clone(),
            descheduler: bins.descheduler.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn each_subcommand_owns_its_flags_and_the_shared_ones_go_anywhere() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "karmada-bench",
            "--rust-bin",
            "/x",
            "run",
            "--clusters",
            "5",
            "--phases",
            "memory",
            "--no-write",
        ])
        .unwrap();
        assert_eq!(cli.global.rust_bin, Some(PathBuf::from("/x")));
        assert!(cli.global.no_write);
        let Command::Run(run) = cli.command else {
            panic!("not run: {:?}", cli.command)
        };
        assert_eq!((run.clusters, run.phases), (5, Phases::Memory));
        // A flag of another scenario is refused, and there is no scenario without a command.
        assert!(Cli::try_parse_from(["karmada-bench", "run", "--churn-minutes", "1"]).is_err());
        assert!(Cli::try_parse_from(["karmada-bench", "--clusters", "5"]).is_err());
    }
}
