//! The stop signal of servers, workers and the leader loop: tokio-util's
//! [`CancellationToken`], re-exported so that every crate names it from one place.

pub use tokio_util::sync::CancellationToken;
