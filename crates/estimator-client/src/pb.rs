//! Generated types of the estimator protocol (see `/proto/README.md`).
//!
//! The module tree mirrors the protobuf packages because the generated code refers to other
//! packages by relative paths; the short aliases below are what the rest of the crate uses.

#[allow(clippy::all, clippy::pedantic, missing_docs, deprecated)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/estimator_protocol.rs"));
}

/// Messages of `github.com.karmada_io.karmada.pkg.estimator.pb`.
pub use generated::github::com::karmada_io::karmada::pkg::estimator::pb as messages;
/// Client and server of `github.com.karmada_io.karmada.pkg.estimator.service.Estimator`.
pub use generated::github::com::karmada_io::karmada::pkg::estimator::service;
/// The minimal `k8s.io.api.core.v1` messages the protocol embeds.
pub use generated::k8s::io::api::core::v1 as core_v1;
/// `k8s.io.apimachinery.pkg.api.resource.Quantity`.
pub use generated::k8s::io::apimachinery::pkg::api::resource;

pub use service::estimator_client::EstimatorClient;
pub use service::estimator_server::{Estimator as EstimatorService, EstimatorServer};
