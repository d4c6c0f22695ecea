//! What each watch event means, one hook per event: the cache's writer applies the event, and
//! what it replaced decides which bindings are queued (client-go's filtering handlers, the
//! reference's cluster reconcile worker; the echoes of our own result patches are not queued).

use std::sync::{Arc, MutexGuard};

use component_base::watch::{RawObject, key_of};
use karmada_api::Cluster;

use super::Context;
use super::filter::{binding_change, cluster_update_fanout, requeue_on_cluster_change};
use crate::metrics::{CLUSTER_RECONCILE_WORKER, IncomingEvent};
use crate::model::binding::{BindingKey, BindingKind, summarize};
use crate::store::{BindingCache, ClusterCache};

impl Context {
    /// A binding object was added or changed (live or from a relist).
    ///
    /// The typed binding is decoded from the object's text, and the filter's fields are read
    /// leniently from a shallow value of it, so that neither a malformed nor a deeply nested
    /// object can stop the watch.
    pub(super) fn on_binding(&self, kind: BindingKind, object: &RawObject) {
        let text = object.json();
        let lenient =
            karmada_api::shallow_value(text, karmada_api::SHALLOW_DEPTH).unwrap_or_default();
        let summary = summarize(&lenient, &self.scheduler_name);
        let key = BindingKey::of(kind, &key_of(object));
        let old = self.binding_cache().upsert(&key, text, &lenient, summary);
        let why = match binding_change(old.as_ref(), Some(&summary)) {
            Some(IncomingEvent::BindingUpdate)
                if self
                    .after_write
                    .own_writes
                    .is_echo(&key, summary.generation) =>
            {
                return;
            }
            Some(why) => why,
            None => return,
        };
        self.enqueue(key, summary.priority, why);
    }

    /// A binding object disappeared.
    pub(super) fn on_binding_deleted(&self, key: &BindingKey) {
        self.after_write.own_writes.forget(key);
        self.binding_cache().remove(key);
    }

    /// A cluster was added or changed. Each cluster object its change concerns fans out to
    /// the bindings it requeues, as one item of the reference's cluster reconcile worker
    /// (processed at once here).
    pub(super) fn on_cluster(&self, cluster: Cluster) {
        let new = Arc::new(cluster);
        let Some(old) = self.cluster_cache().upsert(new.clone()) else {
            return;
        };
        let changes = cluster_update_fanout(&old, &new);
        if changes.is_empty() {
            return;
        }
        let worker = self.metrics.workqueue(CLUSTER_RECONCILE_WORKER);
        let name = &self.scheduler_name;
        for c in changes {
            worker.process(|| {
                let queued =
                    (self.stores).bindings_where(|b| requeue_on_cluster_change(b, &c, name));
                for (key, priority) in queued {
                    self.enqueue(key, priority, IncomingEvent::ClusterChanged);
                }
            });
        }
    }

    /// A cluster disappeared.
    pub(super) fn on_cluster_deleted(&self, name: &str) {
        self.cluster_cache().remove(name);
    }

    fn enqueue(&self, key: BindingKey, priority: i32, why: IncomingEvent) {
        self.metrics.incoming(why);
        self.queue.add(key, priority);
    }

    /// The bindings cache's one writer, shared by both binding watches.
    pub(super) fn binding_cache(&self) -> MutexGuard<'_, BindingCache> {
        self.binding_cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The clusters cache's one writer.
    pub(super) fn cluster_cache(&self) -> MutexGuard<'_, ClusterCache> {
        self.cluster_cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}
