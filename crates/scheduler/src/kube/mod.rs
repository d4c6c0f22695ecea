//! The scheduler's writes through the kube client: the binding API of patches and reads
//! behind its write gate ([`bindings`]), every request bounded in time ([`REQUEST_TIMEOUT`]), and the probe that
//! releases bindings parked while the API server did not answer ([`probe`]).

pub mod bindings;
pub mod probe;

use std::time::Duration;

use kube::api::ApiResource;

use crate::model::binding::BindingKind;

/// Longest wait for the answer to one binding read or write. The client has no read timeout
/// (it also carries the watches), so without this a hung API server (stopped, or a response
/// lost on the way) would hold a worker forever. A write that times out may still land: it is
/// then recognised by its marker (`binding::RESULT_GENERATION_ANNOTATION`) or its 409.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `ApiResource` of a binding kind.
pub fn resource(kind: BindingKind) -> ApiResource {
    ApiResource {
        group: karmada_api::work::GROUP.into(),
        version: karmada_api::work::VERSION.into(),
        api_version: karmada_api::work::API_VERSION.into(),
        kind: kind.kind().into(),
        plural: kind.plural().into(),
    }
}
