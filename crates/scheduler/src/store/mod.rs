//! The scheduler's caches: bindings as watched (decoded, or kept with their decode error, and
//! summarised for the event filter), the clusters and the snapshot shared until a cluster
//! changes, and, with `WorkloadAffinity`, the index of workload groups with the results just
//! written.
//!
//! Reflector-style, on component-base's [`store`](component_base::store): one [`Writer`]
//! owns every change (each watch event, a relist's deletions, the bindings to queue); the
//! workers, explanations and the workload index read through a [`Store`], which has no
//! mutators. The cycles' own writes reach the caches through one after-write hook,
//! [`ResultHook`], the writer's: our own generation bumps, whose watch echoes are not queued
//! ([`own_writes`]), and the results just written ([`workload`]). Which watch events queue
//! which bindings: [`filter`].

pub mod assume;
pub mod filter;
pub mod own_writes;
pub mod workload;
pub mod writer;

pub use writer::Writer;

use std::sync::{Arc, Mutex};

use component_base::key::ObjectKey;
use component_base::store as cb;
use karmada_api::Cluster;
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};
use scheduler_core::snapshot::Snapshot;
use serde::Deserialize as _;
use serde_json::Value;

use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use crate::store::filter::Summary;

/// The one after-write hook: what the daemon's caches learn from a cycle's result patches.
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

/// A binding as cached: decoded, or kept with its decode error.
#[derive(Clone, Debug)]
pub enum Cached {
    Ok(Arc<Binding>),
    Malformed(Arc<Malformed>),
}

/// A binding that does not decode, with what could still be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Malformed {
    /// Identity, labels, generation; with a default spec (and the template reference when it
    /// could be read), so that events can be recorded on it.
    pub binding: Binding,
    /// `spec.x.y: message`.
    pub error: String,
}

/// A binding's entry: its filter summary, and the decoded object only where this scheduler
/// may need it ([`Writer::upsert_binding`]; other schedulers' bindings are most of a shared
/// control plane, and at 1,000 clusters one placed binding holds hundreds of entries).
type Entry = (Option<Cached>, Summary);

/// The caches' read-only side: a cheap clone, with no mutators (the [`Writer`] has them).
#[derive(Clone)]
pub struct Store {
    bindings: cb::Store<BindingKey, Entry>,
    clusters: cb::Store<ObjectKey, Arc<Cluster>>,
    /// The clusters' snapshot, dropped by the writer with each cluster change and kept until
    /// then: scheduler-core memoises per-snapshot answers (filter sets, parsed resource
    /// summaries) that serve every binding scheduled meanwhile.
    snapshot: Arc<Mutex<Option<Arc<Snapshot>>>>,
}

impl Store {
    pub fn binding(&self, key: &BindingKey) -> Option<Cached> {
        self.bindings
            .read(|m| m.get(key).and_then(|(c, _)| c.clone()))
    }

    /// The clusters as a snapshot, shared until the next cluster change.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        // Made under the clusters' lock, so that no change can come between.
        self.clusters.read(|clusters| {
            let mut cached = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
            let fresh = || Arc::new(Snapshot::new(clusters.values().cloned()));
            cached.get_or_insert_with(fresh).clone()
        })
    }

    /// The cluster `name` as cached.
    pub fn cluster(&self, name: &str) -> Option<Arc<Cluster>> {
        self.clusters.get(&ObjectKey::new("", name))
    }

    /// Bindings with an entry (decoded or not; tests).
    #[cfg(test)]
    pub fn binding_count(&self) -> usize {
        self.bindings.read(std::collections::HashMap::len)
    }

    /// The decoded ResourceBindings that `keep` accepts.
    pub(crate) fn resource_bindings(&self, keep: impl Fn(&Binding) -> bool) -> Vec<Arc<Binding>> {
        self.bindings.read(|m| {
            m.values()
                .filter_map(|(c, _)| match c {
                    Some(Cached::Ok(b)) if b.kind == BindingKind::ResourceBinding && keep(b) => {
                        Some(b.clone())
                    }
                    _ => None,
                })
                .collect()
        })
    }
}

/// Decode one binding, from its text, into the cache form; `lenient` is the same object as a
/// [`karmada_api::shallow_value`], from which a malformed binding's status and resource are
/// still read.
pub fn decode_cached(kind: BindingKind, text: &str, lenient: &Value) -> Cached {
    match Binding::decode_text(kind, text) {
        Ok(b) => Cached::Ok(Arc::new(b)),
        Err(m) => {
            let status: ResourceBindingStatus = lenient
                .get("status")
                .and_then(|s| ResourceBindingStatus::deserialize(s).ok())
                .unwrap_or_default();
            let resource = lenient
                .pointer("/spec/resource")
                .and_then(|r| serde::Deserialize::deserialize(r).ok())
                .unwrap_or_default();
            let binding = Binding {
                kind,
                metadata: m.metadata.clone(),
                spec: ResourceBindingSpec {
                    resource,
                    ..Default::default()
                },
                status,
            };
            Cached::Malformed(Arc::new(Malformed {
                binding,
                error: m.error.clone(),
            }))
        }
    }
}
