//! The placement algorithm of Karmada v1.18.2 as pure logic.
//!
//! Given a snapshot of clusters and one binding, decide `spec.clusters`. No I/O happens
//! here: estimators are reached through the async [`estimator::Estimator`] trait, whose
//! implementations (the general estimator in this crate, the gRPC client in
//! `estimator-client`, test stubs) live at the edges.
//!
//! Map of the crate:
//! - [`quantity`]: exact Kubernetes quantity arithmetic; [`selector`]: label and field
//!   selectors of cluster affinities;
//! - [`snapshot::Snapshot`]: the clusters of a scheduling pass, name-sorted, with memos of
//!   per-cluster answers that every binding scheduled against it shares ([`prepared`]);
//! - [`framework`] and [`plugins`]: filter and score plugins with `--plugins` semantics;
//! - [`spread`]: spread-constraint grouping and selection;
//! - [`assign`]: Duplicated, static/dynamic weight and Aggregated division (Webster);
//! - [`general`]: the general estimator; [`estimator`]: the trait every estimator implements
//!   and the merge of their answers;
//! - [`schedule::Scheduler`]: the whole pass (with the `clusterAffinities` failover), returning
//!   the result and, on request, a [`trace`] for `simulate -o explain`;
//! - [`observe`]: hooks through which the daemon times steps, extension points and plugins;
//! - [`features`]: the feature gates the algorithm reads.

pub mod assign;
pub mod detail;
pub mod error;
pub mod estimator;
pub mod features;
pub mod framework;
pub mod general;
pub mod observe;
pub mod plugins;
pub mod predicates;
pub mod prepared;
pub mod quantity;
pub mod schedule;
pub mod selector;
pub mod snapshot;
pub mod spread;
pub mod status;
pub mod trace;

pub use detail::ClusterDetail;
pub use error::{FitError, ScheduleError};
pub use estimator::{
    Ask, AssumedByCluster, AssumedWorkload, AssumptionSource, EstimateRequest, Estimator,
    EstimatorError,
};
