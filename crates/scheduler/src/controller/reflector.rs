//! The one writer of the caches: applies each watch event to [`Stores`] and the gates'
//! caches (the written results of `WorkloadAffinity`, the assumptions of
//! `SchedulingOvercommitProtection`) and returns the bindings the event queues, after
//! client-go's filtering handlers and the reference's cluster reconcile worker. It is also
//! the cycles' after-write hook ([`ResultHook`]), so that what a write leaves in the caches
//! and what its watch echo does are decided in one place.

use std::sync::Arc;

use karmada_api::Cluster;

use crate::cycle::assume::Assumptions;
use crate::metrics::IncomingEvent;
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use crate::store::filter::{
    binding_change, cluster_update_fanout, requeue_on_cluster_change, summarize,
};
use crate::store::own_writes::OwnWrites;
use crate::store::workload::WorkloadIndex;
use crate::store::{Cached, ResultHook, Stores, decode_cached, raw_key};

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
pub struct Reflector {
    stores: Arc<Stores>,
    scheduler_name: String,
    /// Present with the `WorkloadAffinity` gate.
    workload: Option<Arc<WorkloadIndex>>,
    /// Present with the `SchedulingOvercommitProtection` gate.
    assumptions: Option<Arc<Assumptions>>,
    /// Generation bumps of our own result patches, whose watch events are not queued.
    own_writes: OwnWrites,
}

impl Reflector {
    pub fn new(
        stores: Arc<Stores>,
        scheduler_name: &str,
        workload: Option<Arc<WorkloadIndex>>,
        assumptions: Option<Arc<Assumptions>>,
    ) -> Self {
        Self {
            stores,
            scheduler_name: scheduler_name.to_string(),
            workload,
            assumptions,
            own_writes: OwnWrites::default(),
        }
    }

    /// The caches it writes.
    pub fn stores(&self) -> &Arc<Stores> {
        &self.stores
    }

    /// The expectations of our own writes (tests).
    #[cfg(test)]
    pub(crate) fn own_writes(&self) -> &OwnWrites {
        &self.own_writes
    }

    /// A binding object was added or changed (live or from a relist); what it queues.
    ///
    /// Another scheduler's binding is kept as its summary only (enough to notice when it
    /// becomes ours, whose watch event then brings the whole object), except a
    /// ResourceBinding in a workload (anti-)affinity group while that gate is on: the group
    /// filters read every scheduler's placements, as upstream's indexer does.
    ///
    /// `text` is the object as the watch delivers it: the typed binding is decoded from it,
    /// and the filter's fields are read leniently from a shallow value of it, so that neither
    /// a malformed nor a deeply nested object can stop the watch.
    pub fn upsert_binding(&self, kind: BindingKind, text: &str) -> Option<Queued> {
        let raw = karmada_api::shallow_value(text, karmada_api::SHALLOW_DEPTH).unwrap_or_default();
        let summary = summarize(&raw, &self.scheduler_name);
        let keep = summary.owned
            || (self.workload.is_some()
                && kind == BindingKind::ResourceBinding
                && raw.pointer("/spec/workloadAffinityGroups").is_some());
        let key = raw_key(kind, &raw);
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
        let old = self
            .stores
            .put_binding(key.clone(), cached, summary.clone());
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
    pub fn remove_binding(&self, key: &BindingKey) {
        self.own_writes.forget(key);
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(key)) {
            a.release(&akey);
        }
        self.stores.drop_binding(key);
        // After the caches: the sweep keeps only the written copies of cached bindings.
        if let Some(w) = &self.workload {
            w.forget(key);
        }
    }

    /// A cluster was added or changed: the changes whose bindings to queue, each to be passed
    /// to [`Reflector::fan_out`] (the reference's cluster reconcile worker, one item each).
    pub fn upsert_cluster(&self, cluster: Cluster) -> Vec<Cluster> {
        let new = Arc::new(cluster);
        match self.stores.put_cluster(new.clone()) {
            Some(old) => cluster_update_fanout(&old, &new),
            None => Vec::new(),
        }
    }

    /// The bindings a cluster change queues.
    pub fn fan_out(&self, cluster: &Cluster) -> Vec<Queued> {
        self.stores
            .all_bindings()
            .into_iter()
            .filter(|(_, binding, _)| {
                requeue_on_cluster_change(binding, cluster, &self.scheduler_name)
            })
            .map(|(key, _, priority)| Queued {
                key,
                priority,
                why: IncomingEvent::ClusterChanged,
            })
            .collect()
    }

    pub fn remove_cluster(&self, name: &str) {
        self.stores.drop_cluster(name);
    }
}

impl ResultHook for Reflector {
    fn sending(&self, key: &BindingKey, generation: i64, bumps_generation: bool) {
        self.own_writes.sending(key, generation, bumps_generation);
    }

    fn answered(
        &self,
        key: &BindingKey,
        bumps_generation: bool,
        answer: Result<&Binding, &ApiFailure>,
    ) {
        self.own_writes.answered(key, bumps_generation, answer);
        // A result just written that the watch has not delivered yet (`WorkloadAffinity`).
        if let (Some(w), Ok(stored)) = (&self.workload, answer) {
            w.assigning.written(stored);
        }
    }
}
