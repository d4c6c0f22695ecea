//! The cycle's view of the API: binding reads and writes, and Events, as traits so that tests
//! can use in-memory fakes and the daemon the kube client (through its write gate).

use crate::model::binding::{Binding, BindingKey};
use crate::model::condition::ApiFailure;

pub use component_base::write::{ObjectApi, Target};

/// The binding API of a cycle: component-base's [`ObjectApi`] of bindings, named once for the
/// cycle; the daemon's kube API under a permit, the in-memory API server of read-only runs
/// and the fakes of tests.
pub trait BindingApi: ObjectApi<BindingKey, Binding> {}

impl<A: ObjectApi<BindingKey, Binding> + ?Sized> BindingApi for A {}

/// The one after-write hook: what the daemon learns from a cycle's result patches (its own
/// generation bumps, whose watch echoes it does not queue, and the results just written).
/// Called around every result patch (`spec.clusters` and its annotations), never around the
/// status patch. Read-only runs (`simulate`, `explain`) have none.
pub trait ResultHook: Send + Sync {
    /// A result patch of `key`, computed against `generation`, is about to be sent;
    /// `bumps_generation` when it changes the spec. Called before sending, because the watch
    /// event of the write can arrive before the answer.
    fn sending(&self, key: &BindingKey, generation: i64, bumps_generation: bool);

    /// The answer to that patch: the object the server stored, or the failure.
    fn answered(
        &self,
        key: &BindingKey,
        bumps_generation: bool,
        answer: Result<&Binding, &ApiFailure>,
    );
}

/// Where Events go; each call is recorded on the binding and on its resource template.
pub trait EventSink: Send + Sync {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String);

    /// Resolves once events can be taken without dropping any (see component-base's
    /// `EventSink::room`); a worker awaits it before it takes the next binding.
    fn room(&self) -> component_base::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
