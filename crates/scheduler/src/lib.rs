//! The `karmada-scheduler` daemon as a library, so that tests and the binary share every part.
//! A folder per concern; each module uses only those listed before it here (the layout is
//! described in `docs/architecture.md`).
//!
//! - [`metrics`]: Prometheus metrics with the reference's names, labels and buckets;
//! - [`config`]: every flag of the reference v1.18.2, parsed as pflag parses them (the
//!   grammar, the shared flag groups, logging, leader election, the client, serving and the
//!   process lifecycle are `component-base`'s, shared with karmada-descheduler), and what they
//!   build: the scheduler-core pipeline and the estimator connections;
//! - [`model`]: one view over ResourceBinding and ClusterResourceBinding, the applied-placement
//!   annotation (byte-compatible with Go), attempt errors and the `Scheduled` condition, and
//!   whether a binding needs scheduling (the reference's ladder);
//! - [`queue`]: the scheduling queue, concurrent workers with per-key exclusivity;
//! - [`store`]: the caches, the event filter, the workload group index and the generations of
//!   our own writes;
//! - [`cycle`]: one scheduling attempt: decide, run scheduler-core, write, as a state machine
//!   whose effects a short executor sends; with the API as the cycle sees it, the writes as
//!   data (merge patches, event messages), the assumption cache of
//!   `SchedulingOvercommitProtection` and the in-memory API server;
//! - [`kube`]: the writes through the kube client, bounded in time, and the API server probe;
//! - [`controller`]: the watch handlers, the watches, the workers and the wiring;
//! - [`explain`]: what the daemon would decide for a binding, and why, with the daemon's
//!   `/debug/explain` endpoint;
//! - [`daemon`]: the process around the controller.

pub mod config;
pub mod controller;
pub mod cycle;
pub mod daemon;
pub mod explain;
pub mod kube;
pub mod metrics;
pub mod model;
pub mod queue;
pub mod store;
