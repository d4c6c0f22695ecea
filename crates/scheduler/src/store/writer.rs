//! The one writer of the caches: applies each watch event to the [`Store`] and the gates'
//! caches (written results, assumptions), returns the bindings it queues (client-go's filtering
//! handlers, the reference's cluster reconcile worker) and names what it holds for relists.
//! Its [`AfterWrite`] is the cycles' after-write hook ([`ResultHook`]), so that what a write
//! leaves in the caches and what its watch echo does are decided here.

use std::sync::Arc;

use component_base::key::ObjectKey;
use component_base::store as cb;
use component_base::watch::{RawObject, key_of};
use karmada_api::Cluster;

use crate::metrics::IncomingEvent;
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use crate::store::assume::Assumptions;
use crate::store::filter::{
    binding_change, cluster_update_fanout, requeue_on_cluster_change, summarize,
};
use crate::store::own_writes::OwnWrites;
use crate::store::workload::WorkloadIndex;
use crate::store::{Cached, Entry, ResultHook, Store, decode_cached};

/// A binding an event queues, with its priority and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Queued {
    pub key: BindingKey,
    pub priority: i32,
    pub why: IncomingEvent,
}

/// The assumption cache's key of a binding: ResourceBindings only (the reference never
/// assumes ClusterResourceBindings).
fn assumption_key(key: &BindingKey) -> Option<String> {
    (key.kind == BindingKind::ResourceBinding).then(|| key.object.to_string())
}

/// The caches' one writer (see the module).
pub struct Writer {
    bindings: cb::Writer<BindingKey, Entry>,
    clusters: cb::Writer<ObjectKey, Arc<Cluster>>,
    store: Store,
    scheduler_name: String,
    /// Present with the `WorkloadAffinity` gate.
    workload: Option<Arc<WorkloadIndex>>,
    /// Present with the `SchedulingOvercommitProtection` gate.
    assumptions: Option<Arc<Assumptions>>,
    /// Generation bumps of our own result patches, whose watch events are not queued.
    own_writes: Arc<OwnWrites>,
}

impl Writer {
    /// Empty caches for `scheduler_name`, with a workload group index over them when
    /// `workload_affinity` (the gate) is on.
    pub fn new(
        scheduler_name: &str,
        workload_affinity: bool,
        assumptions: Option<Arc<Assumptions>>,
    ) -> Self {
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
        Self {
            bindings,
            clusters,
            store,
            scheduler_name: scheduler_name.to_string(),
            workload,
            assumptions,
            own_writes: Arc::default(),
        }
    }

    /// The read-only side of the caches it writes.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The workload group index over its caches (with `WorkloadAffinity`).
    pub fn workload_index(&self) -> Option<&Arc<WorkloadIndex>> {
        self.workload.as_ref()
    }

    /// The after-write hook of the cycles: it learns what they write without this writer's
    /// lock, so that no worker waits for a watch event being applied.
    pub fn after_write(&self) -> AfterWrite {
        AfterWrite(self.own_writes.clone(), self.workload.clone())
    }

    /// A binding object was added or changed (live or from a relist); what it queues.
    ///
    /// Another scheduler's binding is kept as its summary only (enough to notice when it
    /// becomes ours, whose watch event then brings the whole object), except a
    /// ResourceBinding in a workload (anti-)affinity group while that gate is on: the group
    /// filters read every scheduler's placements, as upstream's indexer does.
    ///
    /// The typed binding is decoded from the object's text, and the filter's fields are read
    /// leniently from a shallow value of it, so that neither a malformed nor a deeply nested
    /// object can stop the watch.
    pub fn upsert_binding(&mut self, kind: BindingKind, object: &RawObject) -> Option<Queued> {
        let text = object.json();
        let raw = karmada_api::shallow_value(text, karmada_api::SHALLOW_DEPTH).unwrap_or_default();
        let summary = summarize(&raw, &self.scheduler_name);
        let keep = summary.owned
            || (self.workload.is_some()
                && kind == BindingKind::ResourceBinding
                && raw.pointer("/spec/workloadAffinityGroups").is_some());
        let key = BindingKey::of(kind, &key_of(object));
        let cached = keep.then(|| decode_cached(kind, text, &raw));
        match (&self.workload, &cached) {
            (Some(w), Some(Cached::Ok(b))) => w.assigning.observed(b),
            (Some(w), None) => w.assigning.removed(&key),
            _ => {}
        }
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(&key)) {
            match &cached {
                // No longer ours: the reference's filtered handler sees a deletion.
                _ if !summary.owned => a.release(&akey),
                Some(Cached::Ok(b)) => a.observed(&akey, &b.status),
                _ => {}
            }
        }
        let old = (self.bindings)
            .insert(key.clone(), (cached, summary.clone()))
            .map(|(_, s)| s);
        match binding_change(old.as_ref(), Some(&summary)) {
            Some(IncomingEvent::BindingUpdate)
                if self.own_writes.is_echo(&key, summary.generation) =>
            {
                None
            }
            Some(why) => Some(Queued {
                key,
                priority: summary.priority,
                why,
            }),
            None => None,
        }
    }

    /// A binding object disappeared.
    pub fn remove_binding(&mut self, key: &BindingKey) {
        self.own_writes.forget(key);
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(key)) {
            a.release(&akey);
        }
        self.bindings.remove(key);
        // After the cache entry (see `WorkloadIndex::written`).
        if let Some(w) = &self.workload {
            w.assigning.removed(key);
        }
    }

    /// The keys of the bindings of `kind` it holds (a relist deletes those it did not list).
    pub fn held_bindings(&self, kind: BindingKind) -> Vec<ObjectKey> {
        let keys = self.bindings.keys(|k| k.kind == kind);
        keys.into_iter().map(|k| k.object).collect()
    }

    /// A cluster was added or changed: the changes whose bindings to queue, each to be passed
    /// to [`Writer::fan_out`] (the reference's cluster reconcile worker, one item each).
    pub fn upsert_cluster(&mut self, cluster: Cluster) -> Vec<Cluster> {
        let new = Arc::new(cluster);
        let key = ObjectKey::new("", new.name());
        match self.put_cluster(|m| m.insert(key, new.clone())) {
            Some(old) => cluster_update_fanout(&old, &new),
            None => Vec::new(),
        }
    }

    /// The bindings a cluster change queues.
    pub fn fan_out(&self, cluster: &Cluster) -> Vec<Queued> {
        self.store.bindings.read(|m| {
            m.iter()
                .filter_map(|(key, (c, s))| match c {
                    Some(Cached::Ok(b))
                        if requeue_on_cluster_change(b, cluster, &self.scheduler_name) =>
                    {
                        Some(Queued {
                            key: key.clone(),
                            priority: s.priority,
                            why: IncomingEvent::ClusterChanged,
                        })
                    }
                    _ => None,
                })
                .collect()
        })
    }

    pub fn remove_cluster(&mut self, name: &str) {
        self.put_cluster(|m| m.remove(&ObjectKey::new("", name)));
    }

    /// The names of the clusters it holds.
    pub fn held_clusters(&self) -> Vec<ObjectKey> {
        self.clusters.keys(|_| true)
    }

    /// Change the clusters, and drop their snapshot (under their lock).
    fn put_cluster<R>(
        &mut self,
        f: impl FnOnce(&mut std::collections::HashMap<ObjectKey, Arc<Cluster>>) -> R,
    ) -> R {
        let snapshot = &self.store.snapshot;
        self.clusters.write(|m| {
            *snapshot.lock().unwrap_or_else(|p| p.into_inner()) = None;
            f(m)
        })
    }
}

/// What the caches learn from the cycles' own result patches (see [`Writer::after_write`]):
/// the expected echoes, and the results just written (with `WorkloadAffinity`).
pub struct AfterWrite(Arc<OwnWrites>, Option<Arc<WorkloadIndex>>);

impl AfterWrite {
    /// The expectations of our own writes (tests).
    #[cfg(test)]
    pub(crate) fn own_writes(&self) -> &OwnWrites {
        &self.0
    }
}

impl ResultHook for AfterWrite {
    fn sending(&self, key: &BindingKey, generation: i64, bumps_generation: bool) {
        self.0.sending(key, generation, bumps_generation);
    }

    fn answered(
        &self,
        key: &BindingKey,
        bumps_generation: bool,
        answer: Result<&Binding, &ApiFailure>,
    ) {
        self.0.answered(key, bumps_generation, answer);
        // A result just written that the watch has not delivered yet.
        if let (Some(w), Ok(stored)) = (&self.1, answer) {
            w.written(stored);
        }
    }
}
