//! Client of `karmada-scheduler-estimator`.
//!
//! Operators without kube-proxy or cluster DNS publish each estimator as an `ExternalName`
//! Service whose `externalName` is a reachable IP (for instance an LVS VIP); this crate reads
//! the Service itself and dials the address it names.
//!
//! * [`pb`]: the estimator protocol of Karmada v1.18.2 (tonic/prost, compiled from `/proto`);
//!   [`kubeproto`]: the Kubernetes protobuf byte encodings it carries; [`request`]: requests
//!   built from a binding.
//! * [`resolver`]: Service (ExternalName, ClusterIP/NodePort/LoadBalancer, headless, not
//!   found) to the addresses an estimator can have; [`source`]: where Services come from (API
//!   server or memory).
//! * [`tls`] and [`dial`]: transport settings decided as the reference decides them, and
//!   connecting with its 5 s limit per address; [`transport`]: the HTTP/2 connection calls
//!   go over (h2 directly, dialled again when it ends).
//! * [`cache`]: one connection per cluster, re-resolved when the Service changes.
//! * [`unary`]: an answer held to one message, as grpc-go holds a unary call's.
//! * [`fanout`]: concurrent calls bounded by one timeout, implementing scheduler-core's
//!   [`Estimator`](scheduler_core::Estimator) trait as [`SchedulerEstimator`].
//!
//! Wiring (daemon): build a [`ConnectionCache`] over a [`KubeServiceSource`], wrap it in a
//! [`SchedulerEstimator`], call [`ConnectionCache::ensure`] on Cluster add/update,
//! [`ConnectionCache::on_cluster_deleted`] on delete and
//! [`ConnectionCache::on_service_changed`] on every Service event in the estimator
//! namespace. `simulate` does the same over an [`InMemoryServiceSource`].

pub mod cache;
pub mod cluster_watch;
pub mod codec;
pub mod dial;
pub mod fanout;
pub mod flags;
pub mod kubeproto;
pub mod metrics;
pub mod options;
pub mod pb;
pub mod request;
pub mod resolver;
pub mod source;
pub mod sync;
pub mod tls;
pub mod transport;
pub mod unary;

pub use cache::{ConnectionCache, EstablishError};
pub use fanout::SchedulerEstimator;
pub use metrics::EstimatorMetrics;
pub use options::{EstimatorOptions, FailurePolicy};
pub use resolver::{Address, Resolution, ResolveError};
pub use source::{InMemoryServiceSource, KubeServiceSource, ServiceLookup, ServiceSource};
