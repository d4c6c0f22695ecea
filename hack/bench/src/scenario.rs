//! A scenario as plain data: what the engine (`main.rs`) makes of the command line and hands
//! to the scenario's phases, which read nothing else.

use std::path::PathBuf;
use std::time::Duration;

use crate::procs::CommonFlags;

#[derive(Clone, Debug)]
pub struct Scenario {
    pub workload: Workload,
    pub estimators: Estimators,
    pub faults: Faults,
    pub samples: Samples,
    pub ceiling: Ceiling,
    /// The flags both schedulers get.
    pub flags: CommonFlags,
    pub bins: Bins,
    /// Requests in flight while creating objects.
    pub create_concurrency: usize,
    /// Give up waiting for a phase after this long.
    pub settle_timeout: Duration,
}

/// What is created.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    /// Cluster objects.
    pub clusters: usize,
    /// Bindings: the run's originals (half each), the descheduler's pass, the estimator
    /// bench's together batch.
    pub bindings: usize,
    pub seed: u64,
    /// Bindings created at a steady pace after the load.
    pub stream: usize,
    /// Bindings each scheduler schedules alone (estimator bench).
    pub alone: usize,
    /// Cluster counts, a control plane each (estimator bench).
    pub scales: Vec<usize>,
    /// The churn stream: minutes, bindings alive at once, creations/s and scale changes/s.
    pub minutes: f64,
    pub live: usize,
    pub rate: f64,
    pub scale_rate: f64,
}

/// Who answers the schedulers' estimates.
#[derive(Clone, Debug, Default)]
pub struct Estimators {
    /// Member clusters with real Go estimators (the run: 0 turns the estimator off).
    pub members: usize,
    /// Scales up to this many clusters use real Go estimators, larger ones the stub.
    pub real_max: usize,
    /// The stub's latency per call.
    pub latency: Duration,
}

/// What is broken during the run.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Estimator fault rows at the largest stub scale.
    pub estimator_rows: bool,
    /// Divided bindings per scheduler and fault row.
    pub estimator_row_bindings: usize,
    /// The API server SIGKILLed and restarted every `api_kill_every` (churn).
    pub api_kills: bool,
    pub api_kill_every: Duration,
}

/// What is sampled, and for how long.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Between two samples (churn).
    pub every: Duration,
    /// `perf` profiles of the load phase.
    pub perf: bool,
    /// The memory bench stops after this long.
    pub cap: Duration,
}

/// The bare client's ceilings: requests in flight tried, seconds per PATCH measurement.
#[derive(Clone, Debug)]
pub struct Ceiling {
    pub concurrency: [usize; 2],
    pub seconds: u64,
}

/// The binaries measured and the tools used.
#[derive(Clone, Debug)]
pub struct Bins {
    pub scheduler: PathBuf,
    pub descheduler: PathBuf,
    /// The Go scheduler (default: the tools' build).
    pub go: Option<PathBuf>,
    /// The offline upstream scheduler, for replaying disagreements after churn.
    pub oracle: PathBuf,
    /// Scratch space (replay inputs).
    pub scratch_dir: PathBuf,
}
