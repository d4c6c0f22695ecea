//! The figures of one run, as written to `docs/bench/results-<C>c-<B>b.json` (read back to
//! draw the per-scale chart) and rendered into the Markdown report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// When a run began, where, and from which commit (`-dirty` when tracked files differed):
/// taken before the run, as the tree may change while a long run goes on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stamp {
    pub date: String,
    pub machine: String,
    pub git_commit: String,
}

/// A whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Run {
    pub clusters: usize,
    pub bindings: usize,
    pub seed: u64,
    pub kube_api_qps: f64,
    pub kube_api_burst: u32,
    pub estimator: bool,
    pub extra_flags: Vec<String>,
    #[serde(flatten)]
    pub stamp: Stamp,
    /// Status PATCHes/s a tight client gets from the apiserver (best concurrency).
    pub patch_ceiling_per_s: f64,
    /// Per concurrency level tried.
    pub patch_ceiling_by_concurrency: BTreeMap<String, f64>,
    /// Bindings/s a client reaches that only writes the Rust solo batch's results (its
    /// PATCHes and Events, in order per binding), per concurrency level tried.
    #[serde(default)]
    pub replay_ceiling_by_concurrency: BTreeMap<String, f64>,
    /// Binding creations/s of the bench's creator during the load phase.
    pub create_rate_per_s: f64,
    /// Creations/s (both halves) of the paced stream phase.
    #[serde(default)]
    pub stream_rate_per_s: f64,
    pub rust: Side,
    pub go: Side,
    /// Agreement right after the load + mirror phases (fresh placements).
    pub agreement_fresh: Agreement,
    /// Agreement of the pairs after churn (scale, taints, deletions applied to both).
    pub agreement_after_churn: Agreement,
    /// CPU seconds used during the load phase by the apiserver and etcd.
    pub apiserver_cpu_load_s: f64,
    pub etcd_cpu_load_s: f64,
    /// Wall time of the load phase (first create to both halves settled).
    pub load_wall_s: f64,
    pub churn: ChurnPlan,
    /// `perf report` excerpt of the Rust scheduler during the load phase, when recorded.
    pub profile_rust: Option<String>,
    /// The Rust algorithm (`Scheduler::schedule_binding`) timed in-process on this run's
    /// workload, per binding; see `algo.rs`.
    pub rust_algorithm_in_process: Hist,
    pub profile_apiserver: Option<String>,
}

impl Run {
    /// The best replay-ceiling rate (bindings/s), when the run measured one.
    pub fn replay_ceiling(&self) -> Option<f64> {
        self.replay_ceiling_by_concurrency
            .values()
            .copied()
            .reduce(f64::max)
    }
}

/// What the churn phase did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChurnPlan {
    pub scaled_pairs: usize,
    pub tainted_clusters: usize,
    pub deleted_clusters: usize,
}

/// One scheduler's figures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Side {
    pub scheduler_name: String,
    pub load: Phase,
    pub mirror: Phase,
    /// Copies created at a pace both can follow (`Run::stream_rate_per_s`).
    #[serde(default)]
    pub stream: Phase,
    pub scale: Phase,
    /// Scheduling attempts (from its metrics) and time until its bindings were quiet.
    pub taint: Quiet,
    pub delete: Quiet,
    /// `karmada_scheduler_scheduling_algorithm_duration_seconds` per step, whole run.
    pub algorithm: BTreeMap<String, Hist>,
    /// Sum of the per-step means: mean algorithm time per attempt.
    pub algorithm_mean_total_s: Option<f64>,
    /// `karmada_scheduler_e2e_scheduling_duration_seconds`, whole run.
    pub e2e: Hist,
    pub attempts_total: f64,
    pub rss_peak_kib: u64,
    pub rss_steady_kib: u64,
    pub cpu_load_s: f64,
    pub cpu_total_s: f64,
    /// Writes to bindings (PATCHes that changed them) per binding in the load phase.
    pub binding_writes_per_binding: f64,
    /// Event writes (creates + count increments) per binding in the load phase.
    pub event_writes_per_binding: f64,
    /// Alone on the apiserver: its own batch of bindings while the other scheduler is idle.
    #[serde(default)]
    pub solo: Phase,
    #[serde(default)]
    pub solo_binding_writes_per_binding: f64,
    #[serde(default)]
    pub solo_event_writes_per_binding: f64,
    /// Wall seconds of its solo phase, and CPU seconds meanwhile of the Rust scheduler, the Go
    /// scheduler, kube-apiserver, etcd and (in runs since the replay ceiling) the bench itself,
    /// in that order.
    #[serde(default)]
    pub solo_wall_s: f64,
    #[serde(default)]
    pub solo_cpu_s: Vec<f64>,
}

/// Throughput and latency of one phase for one scheduler.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Phase {
    pub bindings: usize,
    /// Reached the phase's goal (a `Scheduled` condition; for scale: the new generation observed).
    pub done: usize,
    pub scheduled_true: usize,
    pub by_reason: BTreeMap<String, usize>,
    /// Completions/s between the 10th and 90th percentile of completion times.
    pub steady_rate_per_s: Option<f64>,
    /// Completions/s from the phase start to the last completion.
    pub whole_rate_per_s: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_mean_ms: Option<f64>,
    pub makespan_s: Option<f64>,
    pub settled: bool,
    /// Completions/s after the last creation (the creator no longer shares the apiserver).
    #[serde(default)]
    pub rate_after_creation_per_s: Option<f64>,
}

/// A histogram summary.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Hist {
    pub count: f64,
    pub mean_s: Option<f64>,
    pub p50_s: Option<f64>,
    pub p99_s: Option<f64>,
}

/// Attempts and settle time of a quiet-based churn step.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Quiet {
    pub attempts: f64,
    /// From the churn write to the last write to one of its bindings.
    pub settle_s: Option<f64>,
    pub attempts_per_s: Option<f64>,
}

/// Placement agreement between pairs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Agreement {
    pub pairs: usize,
    pub agree: usize,
    /// Same clusters and replicas but a different order in `spec.clusters`.
    pub order_only: usize,
    /// Same placement, different `Scheduled` condition reason.
    pub condition_differs: usize,
    /// The first disagreements (at most [`MAX_LISTED`]); `disagree` counts them all.
    pub disagreements: Vec<Disagreement>,
    #[serde(default)]
    pub disagree: usize,
    /// The first pairs counted in `order_only` (at most [`MAX_LISTED`]), both orders in full.
    #[serde(default)]
    pub order_differences: Vec<Disagreement>,
    /// The listed disagreements' histories replayed through the oracle (after churn only).
    #[serde(default)]
    pub replays: Vec<crate::replay::PairReplay>,
}

impl Agreement {
    /// `agree/pairs (ratio%)` for the console.
    pub fn summary(&self) -> String {
        let percent = self.ratio() * 100.0;
        format!("{}/{} ({percent:.2}%)", self.agree, self.pairs)
    }

    pub fn ratio(&self) -> f64 {
        if self.pairs == 0 {
            1.0
        } else {
            self.agree as f64 / self.pairs as f64
        }
    }
}

/// Disagreements kept in the results and the report.
pub const MAX_LISTED: usize = 100;

/// One pair whose placements differ.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Disagreement {
    pub binding: String,
    pub strategy: String,
    /// Both placements (cut after 12 entries).
    pub rust: String,
    pub go: String,
    /// `cluster:replicas` entries only one side has.
    #[serde(default)]
    pub only_rust: String,
    #[serde(default)]
    pub only_go: String,
    pub rust_condition: String,
    pub go_condition: String,
}
