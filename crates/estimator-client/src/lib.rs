//! Client of `karmada-scheduler-estimator`.
//!
//! Operators without kube-proxy or cluster DNS publish each estimator as an `ExternalName`
//! Service whose `externalName` is a reachable IP (for instance an LVS VIP); this crate reads
//! the Service itself and dials the address it names.
//!
//! Planned surface (filled by the estimator-client issue):
//! - `pb`: the estimator protocol of Karmada v1.18.2 and Kubernetes protobuf byte encodings;
//! - `resolver`: Service (ExternalName, ClusterIP, headless, LoadBalancer, not found) to
//!   addresses;
//! - `tls`: transport settings decided as the reference decides them;
//! - `cache`: one connection per cluster, re-resolved when the Service changes;
//! - `fanout`: concurrent calls bounded by one timeout, implementing scheduler-core's
//!   `Estimator` trait.
