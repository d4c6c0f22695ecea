//! What every karmada-*-rs daemon shares, as Kubernetes' component-base is shared by the Go
//! components: the command line ([`flags`], [`goparse`], the shared flag groups in
//! [`options`] and [`logflags`]), klog-compatible [`logging`], the kube [`client`] with its
//! QPS limiter ([`ratelimit`]), [`leader`] election, the probe/metrics/profiling servers
//! ([`serve`]), the base [`metrics`], [`events`] recording, fenced object [`write`]s,
//! reflector-style caches ([`store`]) fed by [`watch`]es, and the process [`lifecycle`] and its
//! edge ([`cli`]).

pub mod api;
pub mod cancel;
pub mod cli;
pub mod client;
pub mod events;
pub mod fence;
pub mod flags;
pub mod forbidden;
pub mod goparse;
pub mod key;
pub mod leader;
pub mod lifecycle;
pub mod logflags;
pub mod logging;
pub mod lru;
pub mod metrics;
pub mod options;
pub mod ratelimit;
pub mod serve;
pub mod store;
pub mod watch;
pub mod write;

/// A boxed, sendable future (object-safe async trait methods); the one alias, defined next to
/// the estimator trait of the pure core that needs it first.
pub use scheduler_core::estimator::BoxFuture;
