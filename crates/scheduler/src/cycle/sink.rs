//! The cycle's view of the API: binding writes and Events, as traits so that tests can use
//! in-memory fakes and the daemon the kube client.

use scheduler_core::estimator::BoxFuture;
use serde_json::Value;

use crate::model::binding::{Binding, BindingKey};
use crate::model::condition::ApiFailure;

/// Which endpoint a patch goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Main,
    Status,
}

/// The API writes of a cycle.
pub trait Writer: Send + Sync {
    /// Merge-patch the binding (or its status); returns the object the server stored.
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>>;

    /// The binding as the server has it now.
    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>>;
}

/// Where Events go; each call is recorded on the binding and on its resource template.
pub trait EventSink: Send + Sync {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String);
}
