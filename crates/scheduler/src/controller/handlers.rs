//! What each watch event does: applied to the caches by their one writer
//! ([`crate::controller::reflector::Reflector`]), whose answer — the bindings to queue — is queued
//! here; a cluster change's fan-out runs as an item of the reference's cluster reconcile
//! worker, applied at once.

use karmada_api::Cluster;

use super::Context;
use crate::controller::reflector::Queued;
use crate::metrics::CLUSTER_RECONCILE_WORKER;
use crate::model::binding::{BindingKey, BindingKind};

impl Context {
    fn enqueue(&self, q: Queued) {
        self.metrics.incoming(q.why);
        self.queue.add(q.key, q.priority);
    }

    /// A binding object was added or changed (live or from a relist).
    pub fn upsert_binding(&self, kind: BindingKind, text: &str) {
        if let Some(q) = self.cache.upsert_binding(kind, text) {
            self.enqueue(q);
        }
    }

    /// A binding object disappeared.
    pub fn remove_binding(&self, key: &BindingKey) {
        self.cache.remove_binding(key);
    }

    /// A cluster was added or changed.
    pub fn upsert_cluster(&self, cluster: Cluster) {
        let changes = self.cache.upsert_cluster(cluster);
        if !changes.is_empty() {
            // The reference queues each object to its `ClusterReconcileWorker`; here the
            // fan-out runs at once, as an item added and processed by that worker.
            let worker = self.metrics.workqueue(CLUSTER_RECONCILE_WORKER);
            for c in changes {
                worker.process(|| {
                    for q in self.cache.fan_out(&c) {
                        self.enqueue(q);
                    }
                });
            }
        }
    }

    pub fn remove_cluster(&self, name: &str) {
        self.cache.remove_cluster(name);
    }
}
