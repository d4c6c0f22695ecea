//! The caches' writers, one per cache as kube-runtime's reflector has them: each applies what
//! its watches deliver (and the assumption cache and workload index follow the bindings), and
//! returns what it replaced, so that the controller can tell what the event means.

use std::collections::HashMap;
use std::sync::Arc;

use component_base::key::ObjectKey;
use component_base::store as cb;
use karmada_api::Cluster;
use serde_json::Value;

use crate::model::binding::{BindingKey, BindingKind, Summary};
use crate::store::assume::Assumptions;
use crate::store::workload::WorkloadIndex;
use crate::store::{Cached, Entry, Store, decode_cached};

/// Empty caches: the read-only [`Store`] over them and the writer of each; with
/// `workload_affinity` (the gate) the bindings' writer keeps a workload group index, and with
/// `assumptions` it keeps that cache in step.
pub fn caches(
    workload_affinity: bool,
    assumptions: Option<Arc<Assumptions>>,
) -> (Store, BindingCache, ClusterCache) {
    let (bindings, clusters) = (cb::Writer::default(), cb::Writer::default());
    let store = Store {
        bindings: bindings.store(),
        clusters: clusters.store(),
        snapshot: Arc::default(),
    };
    let workload = workload_affinity.then(|| {
        Arc::new(WorkloadIndex {
            stores: store.clone(),
            assigning: Arc::default(),
        })
    });
    let binding_cache = BindingCache {
        entries: bindings,
        listed: Vec::new(),
        workload,
        assumptions,
    };
    let cluster_cache = ClusterCache {
        clusters,
        store: store.clone(),
    };
    (store, binding_cache, cluster_cache)
}

/// The assumption cache's key of a binding: ResourceBindings only (the reference never
/// assumes ClusterResourceBindings).
fn assumption_key(key: &BindingKey) -> Option<String> {
    (key.kind == BindingKind::ResourceBinding).then(|| key.object.to_string())
}

/// The bindings cache's one writer, fed by both binding watches.
pub struct BindingCache {
    entries: cb::Writer<BindingKey, Entry>,
    /// The kinds whose first list is in: the cache is ready once both are.
    listed: Vec<BindingKind>,
    /// Present with the `WorkloadAffinity` gate.
    workload: Option<Arc<WorkloadIndex>>,
    /// Present with the `SchedulingOvercommitProtection` gate.
    assumptions: Option<Arc<Assumptions>>,
}

impl BindingCache {
    /// The workload group index over the caches (with `WorkloadAffinity`).
    pub fn workload_index(&self) -> Option<&Arc<WorkloadIndex>> {
        self.workload.as_ref()
    }

    /// A binding object was added or changed (live or from a relist), as `text`, `lenient`
    /// (the same object as a [`karmada_api::shallow_value`]) and the controller's `summary` of
    /// it; the summary it replaces.
    ///
    /// Another scheduler's binding is kept as its summary only (enough to notice when it
    /// becomes ours, whose watch event then brings the whole object), except a
    /// ResourceBinding in a workload (anti-)affinity group while that gate is on: the group
    /// filters read every scheduler's placements, as upstream's indexer does.
    pub fn upsert(
        &mut self,
        key: &BindingKey,
        text: &str,
        lenient: &Value,
        summary: Summary,
    ) -> Option<Summary> {
        let keep = summary.owned
            || (self.workload.is_some()
                && key.kind == BindingKind::ResourceBinding
                && lenient.pointer("/spec/workloadAffinityGroups").is_some());
        let cached = keep.then(|| decode_cached(key.kind, text, lenient));
        match (&self.workload, &cached) {
            (Some(w), Some(Cached::Ok(b))) => w.assigning.observed(b),
            (Some(w), None) => w.assigning.removed(key),
            _ => {}
        }
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(key)) {
            match &cached {
                // No longer ours: the reference's filtered handler sees a deletion.
                _ if !summary.owned => a.release(&akey),
                Some(Cached::Ok(b)) => a.observed(&akey, &b.status),
                _ => {}
            }
        }
        let old = self.entries.insert(key.clone(), (cached, summary));
        old.map(|(_, s)| s)
    }

    /// A binding object disappeared.
    pub fn remove(&mut self, key: &BindingKey) {
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(key)) {
            a.release(&akey);
        }
        self.entries.remove(key);
        // After the cache entry (see `WorkloadIndex::written`).
        if let Some(w) = &self.workload {
            w.assigning.removed(key);
        }
    }

    /// The first list of `kind` is in.
    pub fn synced(&mut self, kind: BindingKind) {
        if !self.listed.contains(&kind) {
            self.listed.push(kind);
        }
        let kinds = [
            BindingKind::ResourceBinding,
            BindingKind::ClusterResourceBinding,
        ];
        if kinds.iter().all(|k| self.listed.contains(k)) {
            self.entries.mark_ready();
        }
    }

    /// The keys of the bindings of `kind` it holds (a relist deletes those it did not list).
    pub fn held(&self, kind: BindingKind) -> Vec<ObjectKey> {
        let keys = self.entries.keys(|k| k.kind == kind);
        keys.into_iter().map(|k| k.object).collect()
    }
}

/// The clusters cache's one writer: each change also drops the clusters' snapshot.
pub struct ClusterCache {
    clusters: cb::Writer<ObjectKey, Arc<Cluster>>,
    store: Store,
}

impl ClusterCache {
    /// A cluster was added or changed; the copy it replaces.
    pub fn upsert(&mut self, cluster: Arc<Cluster>) -> Option<Arc<Cluster>> {
        let key = ObjectKey::new("", cluster.name());
        self.put(|m| m.insert(key, cluster))
    }

    pub fn remove(&mut self, name: &str) {
        self.put(|m| m.remove(&ObjectKey::new("", name)));
    }

    /// The names of the clusters it holds.
    pub fn held(&self) -> Vec<ObjectKey> {
        self.clusters.keys(|_| true)
    }

    /// The first list of Clusters is in.
    pub fn synced(&mut self) {
        self.clusters.mark_ready();
    }

    /// Change the clusters, and drop their snapshot (under their lock).
    fn put<R>(&mut self, f: impl FnOnce(&mut HashMap<ObjectKey, Arc<Cluster>>) -> R) -> R {
        let snapshot = &self.store.snapshot;
        self.clusters.write(|m| {
            *snapshot.lock().unwrap_or_else(|p| p.into_inner()) = None;
            f(m)
        })
    }
}
