//! What each watch event does: applied to the caches by their one writer
//! ([`crate::store::Writer`]), whose answer — the bindings to queue — is queued here; a
//! cluster change's fan-out runs as an item of the reference's cluster reconcile worker,
//! applied at once. The watches reach the handlers through [`Reflect`], which also asks the
//! writer what it holds after a relist.

use std::sync::{Arc, MutexGuard};

use component_base::key::ObjectKey;
use component_base::store::Reflect;
use component_base::watch::RawObject;
use karmada_api::Cluster;

use super::Context;
use crate::metrics::CLUSTER_RECONCILE_WORKER;
use crate::model::binding::{BindingKey, BindingKind};
use crate::store::Writer;
use crate::store::writer::Queued;

impl Context {
    fn enqueue(&self, q: Queued) {
        self.metrics.incoming(q.why);
        self.queue.add(q.key, q.priority);
    }

    fn writer(&self) -> MutexGuard<'_, Writer> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A binding object was added or changed (live or from a relist).
    pub fn upsert_binding(&self, kind: BindingKind, text: &str) {
        let queued = self.writer().upsert_binding(kind, text);
        queued.into_iter().for_each(|q| self.enqueue(q));
    }

    /// A binding object disappeared.
    pub fn remove_binding(&self, key: &BindingKey) {
        self.writer().remove_binding(key);
    }

    /// A cluster was added or changed.
    pub fn upsert_cluster(&self, cluster: Cluster) {
        let changes = self.writer().upsert_cluster(cluster);
        if !changes.is_empty() {
            // The reference queues each object to its `ClusterReconcileWorker`; here the
            // fan-out runs at once, as an item added and processed by that worker.
            let worker = self.metrics.workqueue(CLUSTER_RECONCILE_WORKER);
            for c in changes {
                worker.process(|| {
                    let queued = self.writer().fan_out(&c);
                    queued.into_iter().for_each(|q| self.enqueue(q));
                });
            }
        }
    }

    pub fn remove_cluster(&self, name: &str) {
        self.writer().remove_cluster(name);
    }
}

/// The watch of one binding kind.
pub(super) struct Bindings(pub Arc<Context>, pub BindingKind);

impl Reflect<RawObject> for Bindings {
    fn upsert(&mut self, raw: RawObject) {
        self.0.upsert_binding(self.1, raw.json());
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.remove_binding(&BindingKey::of(self.1, key));
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.writer().held_bindings(self.1)
    }
}

/// The Cluster watch.
pub(super) struct Clusters(pub Arc<Context>);

impl Reflect<Cluster> for Clusters {
    fn upsert(&mut self, c: Cluster) {
        self.0.upsert_cluster(c);
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.remove_cluster(&key.name);
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.writer().held_clusters()
    }
}
