//! With `WorkloadAffinity`: the index of workload groups over the caches, and the results just
//! written that the watch has not delivered yet.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::work::ResourceBinding;

use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::store::Store;

/// ResourceBindings whose new result was written but may not be in the cache yet (gate
/// `WorkloadAffinity`), so that the workload-affinity filters honour a result just
/// written before the watch delivers it.
///
/// An entry goes when the binding is fully applied, deleted or no longer ours; a write
/// answered after the binding's deletion adds none ([`WorkloadIndex::written`]).
#[derive(Default)]
pub struct AssigningCache(RwLock<HashMap<BindingKey, Arc<ResourceBinding>>>);

fn rv_number(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl AssigningCache {
    /// The watch delivered `b`: keep a newer written copy; drop it once the binding is fully
    /// applied; otherwise follow the watch.
    pub(crate) fn observed(&self, b: &Binding) {
        let mut m = self.0.write().unwrap_or_else(|p| p.into_inner());
        let key = b.key();
        let Some(current) = m.get(&key) else { return };
        if rv_number(&current.metadata) > rv_number(&b.metadata) {
            return;
        }
        let fully_applied = b
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "FullyApplied" && c.status == "True");
        if fully_applied {
            m.remove(&key);
        } else {
            m.insert(key, Arc::new(b.to_resource_binding()));
        }
    }

    pub(crate) fn removed(&self, key: &BindingKey) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// Bindings with a written copy (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// The workload (anti-)affinity index over the caches.
pub struct WorkloadIndex {
    pub stores: Store,
    pub assigning: Arc<AssigningCache>,
}

impl WorkloadIndex {
    /// A result patch of this RB succeeded; the server returned `stored`. Kept only while the
    /// caches hold the binding, checked under the copies' lock: a deletion drops the cache
    /// entry before the copy, so an answer that comes back after it leaves nothing.
    pub fn written(&self, stored: &Binding) {
        if stored.kind == BindingKind::ResourceBinding {
            let mut m = self.assigning.0.write().unwrap_or_else(|p| p.into_inner());
            let key = stored.key();
            if self.stores.bindings.read(|b| b.contains_key(&key)) {
                m.insert(key, Arc::new(stored.to_resource_binding()));
            }
        }
    }

    pub(crate) fn by(
        &self,
        pick: impl Fn(&karmada_api::work::WorkloadAffinityGroups) -> &str,
        group: &str,
    ) -> Vec<Arc<ResourceBinding>> {
        self.stores
            .resource_bindings(|b| {
                b.spec
                    .workload_affinity_groups
                    .as_ref()
                    .is_some_and(|g| pick(g) == group)
            })
            .iter()
            .map(|b| Arc::new(b.to_resource_binding()))
            .collect()
    }
}

impl scheduler_core::framework::WorkloadGroupIndex for WorkloadIndex {
    fn by_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String> {
        Ok(self.by(|g| &g.affinity_group, group))
    }

    fn by_anti_affinity_group(&self, group: &str) -> Result<Vec<Arc<ResourceBinding>>, String> {
        Ok(self.by(|g| &g.anti_affinity_group, group))
    }

    fn assigning(&self, namespace: &str, name: &str) -> Option<Arc<ResourceBinding>> {
        self.assigning
            .0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&BindingKey::rb(namespace, name))
            .cloned()
    }
}
