//! The cycle's view of the API: binding writes and Events, as traits so that tests can use
//! in-memory fakes and the daemon the kube client.

use crate::model::binding::{Binding, BindingKey};

pub use component_base::write::{ObjectWriter, Target};

/// The API writes of a cycle: component-base's [`ObjectWriter`] of bindings, named once for
/// the cycle, the daemon's kube writer and the fakes of tests (all implement `ObjectWriter`).
pub trait Writer: ObjectWriter<BindingKey, Binding> {}

impl<W: ObjectWriter<BindingKey, Binding> + ?Sized> Writer for W {}

/// Where Events go; each call is recorded on the binding and on its resource template.
pub trait EventSink: Send + Sync {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String);

    /// Resolves once events can be taken without dropping any (see component-base's
    /// `EventSink::room`); a worker awaits it before it takes the next binding.
    fn room(&self) -> component_base::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
