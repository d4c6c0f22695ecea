//! The `karmada-scheduler` daemon as a library, so that tests and the binary share every part.
//!
//! - [`options`]: every flag of the reference v1.18.2, parsed as pflag parses them
//!   ([`goparse`]: Go's value syntax behind them);
//! - [`binding`]: one view over ResourceBinding and ClusterResourceBinding;
//! - [`decision`]: whether a binding needs scheduling (the reference's ladder);
//! - [`annotation`]: the applied-placement annotation, byte-compatible with Go;
//! - [`condition`]: attempt errors and the `Scheduled` condition they map to;
//! - [`patch`]: the writes as data (merge patches, event messages);
//! - [`cycle`]: one scheduling attempt: decide, run scheduler-core, write;
//! - [`queue`]: the scheduling queue, concurrent workers with per-key exclusivity.

pub mod annotation;
pub mod app;
pub mod binding;
pub mod client;
pub mod condition;
pub mod controller;
pub mod cycle;
pub mod daemon;
pub mod decision;
pub mod events;
pub mod goparse;
pub mod http;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod options;
pub mod own_writes;
pub mod patch;
pub mod pprof;
pub mod queue;
pub mod ratelimit;
pub mod sink;
