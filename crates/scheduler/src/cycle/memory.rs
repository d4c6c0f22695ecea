//! Bindings held in memory and written as the API server writes them: JSON merge patches with
//! `resourceVersion` preconditions, the `status` subresource apart from the main resource, a
//! generation bump on every spec change. `simulate` and `explain` run the daemon's cycle
//! against it, so what they report is what the daemon would write; the cycle's unit tests use
//! it as their API server. It is also their workload group index: the bindings it holds are
//! the other bindings the group filters read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use karmada_api::work::ResourceBinding;
use scheduler_core::estimator::BoxFuture;
use scheduler_core::framework::WorkloadGroupIndex;
use serde_json::{Value, json};

use crate::cycle::sink::{ObjectApi, Target};
use crate::model::binding::{Binding, BindingKey, BindingKind, MalformedBinding};
use crate::model::condition::ApiFailure;

/// RFC 7386 merge of `patch` into `target` (`null` removes a field).
pub fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// The binding objects, with the API server's write rules.
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: Mutex<HashMap<BindingKey, (BindingKind, Value)>>,
    resource_version: Mutex<u64>,
    /// Every patch applied, in order (`explain` shows them; tests read them).
    log: Mutex<Vec<(BindingKey, Target, Value)>>,
}

fn conflict() -> ApiFailure {
    ApiFailure {
        code: 409,
        reason: "Conflict".into(),
        message: "the object has been modified; please apply your changes to the latest version and try again".into(),
    }
}

fn not_found(key: &BindingKey) -> ApiFailure {
    ApiFailure {
        code: 404,
        reason: "NotFound".into(),
        message: format!("{} not found", key.describe()),
    }
}

impl MemoryStore {
    fn next_version(&self) -> String {
        let mut rv = self
            .resource_version
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *rv += 1;
        rv.to_string()
    }

    /// Store `raw` as it would be created: a new resourceVersion, generation 1 unless it
    /// carries one. Returns the decoded binding (the error names the field).
    pub fn insert(
        &self,
        kind: BindingKind,
        mut raw: Value,
    ) -> Result<Binding, Box<MalformedBinding>> {
        if let Some(meta) = raw.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(self.next_version()));
            meta.entry("generation").or_insert(json!(1));
        }
        let binding = Binding::decode(kind, &raw)?;
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(binding.key(), (kind, raw));
        Ok(binding)
    }

    /// The binding as stored now.
    pub fn binding(&self, key: &BindingKey) -> Option<Binding> {
        let objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let (kind, raw) = objects.get(key)?;
        Binding::decode(*kind, raw).ok()
    }

    /// The patches applied to `key`, in order.
    pub fn patches_of(&self, key: &BindingKey) -> Vec<(Target, Value)> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(k, _, _)| k == key)
            .map(|(_, t, p)| (*t, p.clone()))
            .collect()
    }

    /// Another writer changes the object: the patch lands and the resourceVersion moves.
    pub fn external_write(&self, key: &BindingKey, patch: &Value) {
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, o)) = objects.get_mut(key) {
            merge(o, patch);
            o["metadata"]["resourceVersion"] = json!(self.next_version());
        }
    }

    /// The server side of a patch: precondition, merge, generation bump.
    pub fn apply(
        &self,
        key: &BindingKey,
        target: Target,
        patch: &Value,
    ) -> Result<Binding, ApiFailure> {
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let Some((kind, o)) = objects.get_mut(key) else {
            return Err(not_found(key));
        };
        if let Some(want) = patch.pointer("/metadata/resourceVersion")
            && Some(want) != o.pointer("/metadata/resourceVersion")
        {
            return Err(conflict());
        }
        let mut p = patch.clone();
        if let Some(m) = p.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        match target {
            Target::Main => {
                if let Some(m) = p.as_object_mut() {
                    m.remove("status");
                }
            }
            Target::Status => {
                p = json!({"status": p.get("status").cloned().unwrap_or(Value::Null)});
            }
        }
        let spec_before = o.get("spec").cloned();
        merge(o, &p);
        // Like the apiserver: a spec change bumps the generation.
        if o.get("spec").cloned() != spec_before {
            let g = o["metadata"]["generation"].as_i64().unwrap_or(0);
            o["metadata"]["generation"] = json!(g + 1);
        }
        o["metadata"]["resourceVersion"] = json!(self.next_version());
        let stored = Binding::decode(*kind, o).map_err(|e| ApiFailure {
            code: 422,
            reason: "Invalid".into(),
            message: e.error.clone(),
        })?;
        drop(objects);
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push((
            key.clone(),
            target,
            patch.clone(),
        ));
        Ok(stored)
    }
}

impl MemoryStore {
    /// The ResourceBindings held whose `spec.workloadAffinityGroups.<field>` is `group`.
    fn in_group(&self, field: &str, group: &str) -> Vec<Arc<ResourceBinding>> {
        let pointer = format!("/spec/workloadAffinityGroups/{field}");
        let objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        objects
            .values()
            .filter(|(kind, raw)| {
                *kind == BindingKind::ResourceBinding
                    && raw.pointer(&pointer).and_then(Value::as_str) == Some(group)
            })
            .filter_map(|(kind, raw)| Binding::decode(*kind, raw).ok())
            .map(|b| Arc::new(b.to_resource_binding()))
            .collect()
    }
}

/// The bindings held are the other bindings of a read-only run (`simulate`'s input, the
/// control plane's for `explain`): the workload group filters read them as the daemon's read
/// its cache. What a cycle writes is held at once, so no copy is ever "assigning".
impl WorkloadGroupIndex for MemoryStore {
    fn by_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String> {
        Ok(self.in_group("affinityGroup", group))
    }

    fn by_anti_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String> {
        Ok(self.in_group("antiAffinityGroup", group))
    }

    fn assigning(&self, _namespace: &str, _name: &str) -> Option<Arc<ResourceBinding>> {
        None
    }
}

impl ObjectApi<BindingKey, Binding> for MemoryStore {
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move { self.apply(key, target, &patch) })
    }

    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move { self.binding(key).ok_or_else(|| not_found(key)) })
    }
}
