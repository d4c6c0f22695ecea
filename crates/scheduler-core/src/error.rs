//! Errors of one scheduling attempt, classified as the reference classifies them.
//!
//! The driver maps each variant onto the `Scheduled` condition reason: [`FitError`] →
//! `NoClusterFit`, [`ScheduleError::Unschedulable`] → `Unschedulable`, anything else →
//! `SchedulerError`. Messages are the reference's, word for word, including the
//! `failed to ...: ` prefixes added by each stage.

use std::collections::BTreeMap;

/// No cluster passed the filters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FitError {
    /// Every cluster of the snapshot, terminating ones included.
    pub num_all_clusters: usize,
    /// Cluster name → reasons of the first filter plugin that rejected it.
    pub diagnosis: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.num_all_clusters;
        if n == 0 || self.diagnosis.is_empty() {
            return write!(f, "0/{n} clusters are available: no cluster exists.");
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for reasons in self.diagnosis.values() {
            for r in reasons {
                *counts.entry(r.as_str()).or_default() += 1;
            }
        }
        // Sorted as plain strings, count first: "10 x" sorts before "2 x", as upstream.
        let mut items: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
        items.sort();
        write!(f, "0/{n} clusters are available: {}.", items.join(", "))
    }
}

impl std::error::Error for FitError {}

/// The outcome of a failed scheduling attempt.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// No feasible cluster (`NoClusterFit`); the driver clears `spec.clusters`.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// Too few available replicas (`Unschedulable`); the message carries its prefixes.
    #[error("{0}")]
    Unschedulable(String),
    /// Any other failure (`SchedulerError`), e.g. spread constraints that cannot be met.
    #[error("{0}")]
    Other(String),
}

impl ScheduleError {
    /// Prefix the message the way a Go `fmt.Errorf("...: %w", err)` would, keeping the class.
    pub fn wrap(self, prefix: &str) -> Self {
        match self {
            Self::Fit(f) => Self::Other(format!("{prefix}: {f}")),
            Self::Unschedulable(m) => Self::Unschedulable(format!("{prefix}: {m}")),
            Self::Other(m) => Self::Other(format!("{prefix}: {m}")),
        }
    }

    /// The `Scheduled` condition reason the reference writes for this error.
    pub fn condition_reason(&self) -> &'static str {
        match self {
            Self::Fit(_) => "NoClusterFit",
            Self::Unschedulable(_) => "Unschedulable",
            Self::Other(_) => "SchedulerError",
        }
    }
}
