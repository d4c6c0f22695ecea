//! The scheduler's caches: bindings as watched (decoded, or kept with their decode error, with
//! the controller's summary of each), the clusters and the snapshot shared until a cluster
//! changes, and, with `WorkloadAffinity`, the index of workload groups with the results just
//! written; beside them the assumption cache of `SchedulingOvercommitProtection`.
//!
//! Reflector-style, on component-base's [`store`](component_base::store): each cache has one
//! writer, which owns every change ([`BindingCache`], [`ClusterCache`]: each watch event, a
//! relist's deletions); the workers, explanations and the workload index read through a
//! [`Store`], which has no mutators. Nothing here decides what an event means: which bindings
//! it queues is the controller's.

pub mod assume;
pub mod workload;
pub mod writer;

pub use writer::{BindingCache, ClusterCache, caches};

use std::sync::{Arc, Mutex};

use component_base::key::ObjectKey;
use component_base::store as cb;
use karmada_api::Cluster;
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};
use scheduler_core::snapshot::Snapshot;
use serde::Deserialize as _;
use serde_json::Value;

use crate::model::binding::Summary;
use crate::model::binding::{Binding, BindingKey, BindingKind};

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
/// may need it ([`BindingCache::upsert`]; other schedulers' bindings are most of a shared
/// control plane, and at 1,000 clusters one placed binding holds hundreds of entries).
type Entry = (Option<Cached>, Summary);

/// The caches' read-only side: a cheap clone, with no mutators (their writers have them).
#[derive(Clone)]
pub struct Store {
    bindings: cb::Store<BindingKey, Entry>,
    clusters: cb::Store<ObjectKey, Arc<Cluster>>,
    /// The clusters' snapshot, dropped by the clusters' writer with each change and kept until
    /// then: scheduler-core memoises per-snapshot answers (filter sets, parsed resource
    /// summaries) that serve every binding scheduled meanwhile.
    snapshot: Arc<Mutex<Option<Arc<Snapshot>>>>,
}

impl Store {
    /// Resolves once every cache holds its first complete list (both binding kinds, the
    /// Clusters); fails if a writer went away first.
    pub async fn wait_until_ready(&self) -> Result<(), cb::WatchEnded> {
        self.bindings.wait_until_ready().await?;
        self.clusters.wait_until_ready().await
    }

    /// Whether every cache holds its first complete list.
    pub fn is_ready(&self) -> bool {
        self.bindings.is_ready() && self.clusters.is_ready()
    }

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

    /// The decoded bindings that `pick` accepts, with their priorities (a cluster change's
    /// fan-out).
    pub fn bindings_where(&self, pick: impl Fn(&Binding) -> bool) -> Vec<(BindingKey, i32)> {
        self.bindings.read(|m| {
            m.iter()
                .filter_map(|(key, (c, s))| match c {
                    Some(Cached::Ok(b)) if pick(b) => Some((key.clone(), s.priority)),
                    _ => None,
                })
                .collect()
        })
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
