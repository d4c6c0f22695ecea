//! The scheduler's caches: bindings as watched (decoded, or kept with their decode error, and
//! summarised for the event filter), the clusters and the snapshot shared until a cluster
//! changes, and, with `WorkloadAffinity`, the index of workload groups with the results just
//! written.
//!
//! Reflector-style: [`Stores`] is read and written through methods only (no lock leaves this
//! module); every watch event is applied by one writer, the controller's `Reflector`, which
//! returns the bindings to queue. What the caches learn from a cycle's own writes comes
//! through one after-write hook, [`ResultHook`], defined here: our own generation bumps
//! ([`own_writes`]) and the results just written ([`workload::AssigningCache`]).
//!
//! Beside the caches: which watch events queue which bindings ([`filter`]), the workload
//! group index ([`workload`]) and the generations of our own writes, whose watch echoes are
//! not queued ([`own_writes`]).

pub mod filter;
pub mod own_writes;
pub mod workload;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

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

/// The caches the workers read; written by the controller's `Reflector` only.
#[derive(Default)]
pub struct Stores {
    /// Every binding's filter summary; the decoded object only where this scheduler may need
    /// it (see the controller's `Reflector::upsert_binding`). At 1,000 clusters a placed
    /// Duplicated binding holds hundreds of `spec.clusters` entries, and the other
    /// schedulers' bindings are most of the cache on a shared control plane.
    bindings: RwLock<HashMap<BindingKey, (Option<Cached>, Summary)>>,
    clusters: RwLock<BTreeMap<String, Arc<Cluster>>>,
    /// Bumped (under the `clusters` write lock) by every cluster change.
    cluster_version: AtomicU64,
    /// The snapshot of `clusters` at a `cluster_version`. Kept until a cluster changes, because
    /// scheduler-core memoises per-snapshot answers (filter sets, parsed resource summaries)
    /// that then serve every binding scheduled meanwhile.
    snapshot: Mutex<Option<(u64, Arc<Snapshot>)>>,
}

impl Stores {
    pub fn binding(&self, key: &BindingKey) -> Option<Cached> {
        self.bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .and_then(|(c, _)| c.clone())
    }

    /// The clusters as a snapshot, shared until the next cluster change.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        // Read under the lock, so the version describes exactly these clusters.
        let version = self.cluster_version.load(Ordering::Acquire);
        let mut cached = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, s)) = cached.as_ref()
            && *v == version
        {
            return s.clone();
        }
        let fresh = Arc::new(Snapshot::new(clusters.values().cloned()));
        *cached = Some((version, fresh.clone()));
        fresh
    }

    /// Insert or replace a cluster; the previous object, if any.
    pub(crate) fn put_cluster(&self, cluster: Arc<Cluster>) -> Option<Arc<Cluster>> {
        let mut clusters = self.clusters.write().unwrap_or_else(|p| p.into_inner());
        self.cluster_version.fetch_add(1, Ordering::AcqRel);
        clusters.insert(cluster.name().to_string(), cluster)
    }

    pub(crate) fn drop_cluster(&self, name: &str) {
        let mut clusters = self.clusters.write().unwrap_or_else(|p| p.into_inner());
        self.cluster_version.fetch_add(1, Ordering::AcqRel);
        clusters.remove(name);
    }

    /// The cluster `name` as cached.
    pub fn cluster(&self, name: &str) -> Option<Arc<Cluster>> {
        self.clusters
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// Insert or replace a binding's entry; the previous summary, if any.
    pub(crate) fn put_binding(
        &self,
        key: BindingKey,
        cached: Option<Cached>,
        summary: Summary,
    ) -> Option<Summary> {
        self.bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, (cached, summary))
            .map(|(_, s)| s)
    }

    pub(crate) fn drop_binding(&self, key: &BindingKey) {
        self.bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// Bindings with an entry (decoded or not).
    pub fn binding_count(&self) -> usize {
        self.bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Those of `keys` that have no entry.
    pub(crate) fn not_cached(&self, keys: Vec<BindingKey>) -> Vec<BindingKey> {
        let bindings = self.bindings.read().unwrap_or_else(|p| p.into_inner());
        keys.into_iter()
            .filter(|k| !bindings.contains_key(k))
            .collect()
    }

    /// The decoded ResourceBindings that `keep` accepts.
    pub(crate) fn resource_bindings(&self, keep: impl Fn(&Binding) -> bool) -> Vec<Arc<Binding>> {
        self.bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter_map(|(c, _)| match c {
                Some(Cached::Ok(b)) if b.kind == BindingKind::ResourceBinding && keep(b) => {
                    Some(b.clone())
                }
                _ => None,
            })
            .collect()
    }

    pub(crate) fn all_bindings(&self) -> Vec<(BindingKey, Arc<Binding>, i32)> {
        self.bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|(k, (c, s))| match c {
                Some(Cached::Ok(b)) => Some((k.clone(), b.clone(), s.priority)),
                _ => None,
            })
            .collect()
    }
}

/// The key of a raw binding (name and namespace read leniently, as the decoder does).
pub(crate) fn raw_key(kind: BindingKind, raw: &Value) -> BindingKey {
    let field = |f: &str| {
        raw.get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match kind {
        BindingKind::ResourceBinding => BindingKey::rb(field("namespace"), field("name")),
        BindingKind::ClusterResourceBinding => BindingKey::crb(field("name")),
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
