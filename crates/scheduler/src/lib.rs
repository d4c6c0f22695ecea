//! The `karmada-scheduler` daemon as a library, so that tests and the binary share every part.
//!
//! - [`options`]: every flag of the reference v1.18.2, parsed as pflag parses them (the
//!   grammar, the shared flag groups, logging, leader election, the client, serving and the
//!   process lifecycle are `component-base`'s, shared with karmada-descheduler);
//! - [`binding`]: one view over ResourceBinding and ClusterResourceBinding;
//! - [`decision`]: whether a binding needs scheduling (the reference's ladder);
//! - [`annotation`]: the applied-placement annotation, byte-compatible with Go;
//! - [`condition`]: attempt errors and the `Scheduled` condition they map to;
//! - [`patch`]: the writes as data (merge patches, event messages);
//! - [`cycle`]: one scheduling attempt: decide, run scheduler-core, write;
//! - [`queue`]: the scheduling queue, concurrent workers with per-key exclusivity;
//! - [`assume`]: the assumption cache of `SchedulingOvercommitProtection`;
//! - [`controller`]: watches, caches and workers; [`daemon`]: the process around them.

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
