//! Scheduling Events on bindings and their resource templates: the two objects the reference
//! records each scheduling result on. Writing is component-base's recorder.

use component_base::events::{PendingEvent, binding_references};

use crate::cycle::sink::EventSink;
use crate::model::binding::Binding;

/// The two involved objects of a scheduling event: the binding and its template.
pub fn events_for(
    binding: &Binding,
    warning: bool,
    reason: &str,
    message: &str,
) -> [PendingEvent; 2] {
    binding_references(
        binding.kind.kind(),
        &binding.metadata,
        &binding.spec.resource,
    )
    .map(|involved| PendingEvent::on(involved, warning, reason, message))
}

/// Every component event sink (the daemon's [`Recorder`](component_base::events::Recorder),
/// the [`MemoryEvents`](component_base::events::MemoryEvents) of tests and read-only runs) records a binding's events on the
/// binding and on its template.
impl<S: component_base::events::EventSink + ?Sized> EventSink for S {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String) {
        for e in events_for(binding, warning, reason, &message) {
            self.record(e);
        }
    }

    fn room(&self) -> component_base::BoxFuture<'_, ()> {
        component_base::events::EventSink::room(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::binding::BindingKind;
    use serde_json::json;

    #[test]
    fn binding_and_template_references() {
        let rb = Binding::decode(BindingKind::ResourceBinding, &json!({
            "metadata": {"name": "b", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d", "uid": "u2"}}
        })).unwrap();
        let [on_binding, on_template] = events_for(&rb, false, "ScheduleBindingSucceed", "m");
        assert_eq!(on_binding.namespace, "ns");
        assert_eq!(on_binding.involved.kind.as_deref(), Some("ResourceBinding"));
        assert_eq!(
            on_binding.involved.api_version.as_deref(),
            Some("work.karmada.io/v1alpha2")
        );
        assert_eq!(on_template.involved.kind.as_deref(), Some("Deployment"));
        assert_eq!(on_template.involved.uid.as_deref(), Some("u2"));
        let crb = Binding::decode(
            BindingKind::ClusterResourceBinding,
            &json!({
                "metadata": {"name": "c"},
                "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": "n"}}
            }),
        )
        .unwrap();
        let [a, b] = events_for(&crb, true, "ScheduleBindingFailed", "x");
        assert_eq!(
            (a.namespace.as_str(), b.namespace.as_str()),
            ("default", "default")
        );
        assert_eq!(a.involved.namespace, None);
    }
}
