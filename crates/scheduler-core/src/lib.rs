//! The placement algorithm of Karmada v1.18.2 as pure logic.
//!
//! Given a snapshot of clusters and one binding, decide `spec.clusters`. No I/O happens
//! here: estimators are reached through the async [`estimator::Estimator`] trait, whose
//! implementations (the general estimator in this crate, the gRPC client in
//! `estimator-client`, test stubs) live at the edges.
//!
//! Planned surface (filled by the scheduler-core issue):
//! - `quantity`: exact Kubernetes quantity arithmetic;
//! - `snapshot::Snapshot`: the clusters of one scheduling cycle;
//! - `framework` and `plugins::*`: filter and score plugins with `--plugins` semantics;
//! - `spread`: spread-constraint grouping and selection;
//! - `assign`: Duplicated, static/dynamic weight and Aggregated division (Webster);
//! - `general`: the general estimator;
//! - `schedule(...)`: the whole pass, returning the result and a trace for `explain`.

pub mod assign;
pub mod detail;
pub mod error;
pub mod estimator;
pub mod features;
pub mod framework;
pub mod general;
pub mod observe;
pub mod plugins;
pub mod prepared;
pub mod quantity;
pub mod schedule;
pub mod selector;
pub mod snapshot;
pub mod spread;
pub mod trace;

pub use detail::ClusterDetail;
pub use error::{FitError, ScheduleError};
pub use estimator::{EstimateRequest, Estimator, EstimatorError};
