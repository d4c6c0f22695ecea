//! What every karmada-*-rs daemon shares, as Kubernetes' component-base is shared by the Go
//! components: the command line ([`flags`], [`goparse`], the shared flag groups in
//! [`options`] and [`logflags`]), klog-compatible [`logging`], the kube [`client`] with its
//! QPS limiter ([`ratelimit`]), [`leader`] election, the probe/metrics/profiling servers
//! ([`serve`]), the base [`metrics`], [`events`] recording, and the process [`lifecycle`] and
//! its edge ([`cli`]).

pub mod api;
pub mod cancel;
pub mod cli;
pub mod client;
pub mod events;
pub mod fence;
pub mod flags;
pub mod goparse;
pub mod leader;
pub mod lifecycle;
pub mod logflags;
pub mod logging;
pub mod lru;
pub mod metrics;
pub mod options;
pub mod ratelimit;
pub mod serve;
pub mod watch;

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (object-safe async trait methods).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
