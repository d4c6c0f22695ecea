//! Scheduling Events on bindings and their resource templates: the two objects the reference
//! records each scheduling result on. Writing is component-base's recorder.

use std::sync::Arc;

use component_base::events::{PendingEvent, Recorder};
use k8s_openapi::api::core::v1::ObjectReference;

use crate::cycle::sink::EventSink;
use crate::model::binding::{Binding, BindingKind};

/// The two involved objects of a scheduling event: the binding and its template.
pub fn events_for(
    binding: &Binding,
    warning: bool,
    reason: &str,
    message: &str,
) -> [PendingEvent; 2] {
    let api_version = karmada_api::work::API_VERSION.to_string();
    let binding_ref = ObjectReference {
        api_version: Some(api_version),
        kind: Some(binding.kind.kind().to_string()),
        name: binding.metadata.name.clone(),
        namespace: binding
            .metadata
            .namespace
            .clone()
            .filter(|_| binding.kind == BindingKind::ResourceBinding),
        uid: binding.metadata.uid.clone(),
        resource_version: binding.metadata.resource_version.clone(),
        ..Default::default()
    };
    let r = &binding.spec.resource;
    let template_ref = ObjectReference {
        api_version: Some(r.api_version.clone()),
        kind: Some(r.kind.clone()),
        name: Some(r.name.clone()),
        namespace: (!r.namespace.is_empty()).then(|| r.namespace.clone()),
        uid: (!r.uid.is_empty()).then(|| r.uid.clone()),
        ..Default::default()
    };
    [binding_ref, template_ref].map(|involved| PendingEvent::on(involved, warning, reason, message))
}

impl EventSink for Recorder {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String) {
        for e in events_for(binding, warning, reason, &message) {
            self.send(e);
        }
    }
}

/// A recorder that keeps events in memory (tests, `simulate`).
#[derive(Clone, Debug, Default)]
pub struct MemoryRecorder(pub Arc<std::sync::Mutex<Vec<PendingEvent>>>);

impl EventSink for MemoryRecorder {
    fn event(&self, binding: &Binding, warning: bool, reason: &'static str, message: String) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.extend(events_for(binding, warning, reason, &message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::binding::BindingKind;
    use serde_json::json;

    #[test]
    fn binding_and_template_references() {
        let rb = Binding::decode(BindingKind::ResourceBinding, json!({
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
            json!({
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
