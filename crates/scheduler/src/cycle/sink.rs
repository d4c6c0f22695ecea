//! The cycle's view of the API: binding reads and writes, and Events, as traits so that tests
//! can use in-memory fakes and the daemon the kube client (through its write gate).

use crate::model::binding::{Binding, BindingKey};

pub use component_base::write::{ObjectApi, Target};

/// The binding API of a cycle: component-base's [`ObjectApi`] of bindings, named once for the
/// cycle; the daemon's kube API under a permit, the in-memory API server of read-only runs
/// and the fakes of tests.
pub trait BindingApi: ObjectApi<BindingKey, Binding> {}

impl<A: ObjectApi<BindingKey, Binding> + ?Sized> BindingApi for A {}

/// Where Events go; each call is recorded on the binding and on its resource template.
pub trait EventSink: Send + Sync {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String);

    /// Resolves once events can be taken without dropping any (see component-base's
    /// `EventSink::room`); a worker awaits it before it takes the next binding.
    fn room(&self) -> component_base::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
