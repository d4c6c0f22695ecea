//! What each watch event does to the caches ([`crate::store`]) and the queue: client-go's
//! filtering handlers, and the reference's cluster reconcile worker applied at once.

use std::sync::Arc;

use karmada_api::Cluster;
use serde_json::Value;

use super::Context;
use crate::metrics::{CLUSTER_RECONCILE_WORKER, IncomingEvent};
use crate::model::binding::{BindingKey, BindingKind};
use crate::store::filter::{
    binding_change, cluster_update_fanout, requeue_on_cluster_change, summarize,
};
use crate::store::{Cached, decode_cached, raw_key};

/// The assumption cache's key of a binding: ResourceBindings only (the reference never
/// assumes ClusterResourceBindings).
fn assumption_key(key: &BindingKey) -> Option<String> {
    (key.kind == BindingKind::ResourceBinding).then(|| format!("{}/{}", key.namespace, key.name))
}

impl Context {
    fn enqueue(&self, key: BindingKey, priority: i32, why: IncomingEvent) {
        self.metrics.incoming(why);
        self.queue.add(key, priority);
    }

    fn fan_out(&self, cluster: &Cluster) {
        for (key, binding, priority) in self.stores.all_bindings() {
            if requeue_on_cluster_change(&binding, cluster, &self.scheduler_name) {
                self.enqueue(key, priority, IncomingEvent::ClusterChanged);
            }
        }
    }

    /// A binding object was added or changed (live or from a relist).
    ///
    /// Another scheduler's binding is kept as its summary only (enough to notice when it
    /// becomes ours, whose watch event then brings the whole object), except a
    /// ResourceBinding in a workload (anti-)affinity group while that gate is on: the group
    /// filters read every scheduler's placements, as upstream's indexer does.
    pub fn upsert_binding(&self, kind: BindingKind, raw: Value) {
        let summary = summarize(&raw, &self.scheduler_name);
        let keep = summary.owned
            || (self.workload.is_some()
                && kind == BindingKind::ResourceBinding
                && raw.pointer("/spec/workloadAffinityGroups").is_some());
        let key = raw_key(kind, &raw);
        let cached = keep.then(|| decode_cached(kind, raw));
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
        let old = self
            .stores
            .bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), (cached, summary.clone()))
            .map(|(_, s)| s);
        match binding_change(old.as_ref(), Some(&summary)) {
            Some(IncomingEvent::BindingUpdate)
                if self.own_writes.is_echo(&key, summary.generation) => {}
            Some(why) => self.enqueue(key, summary.priority, why),
            None => {}
        }
    }

    /// A binding object disappeared.
    pub fn remove_binding(&self, key: &BindingKey) {
        self.own_writes.forget(key);
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(key)) {
            a.release(&akey);
        }
        self.stores
            .bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        // After the caches: the sweep keeps only the written copies of cached bindings.
        if let Some(w) = &self.workload {
            w.forget(key);
        }
    }

    /// A cluster was added or changed.
    pub fn upsert_cluster(&self, cluster: Cluster) {
        let new = Arc::new(cluster);
        let old = self.stores.put_cluster(new.clone());
        if let Some(old) = old {
            let changes = cluster_update_fanout(&old, &new);
            if !changes.is_empty() {
                // The reference queues each object to its `ClusterReconcileWorker`; here the
                // fan-out runs at once, as an item added and processed by that worker.
                let worker = self.metrics.workqueue(CLUSTER_RECONCILE_WORKER);
                for c in changes {
                    worker.process(|| self.fan_out(&c));
                }
            }
        }
    }

    pub fn remove_cluster(&self, name: &str) {
        self.stores.drop_cluster(name);
    }
}
