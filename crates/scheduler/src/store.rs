//! The scheduler's caches: bindings as watched (decoded, or kept with their decode error, and
//! summarised for the event filter), the clusters and the snapshot shared until a cluster
//! changes, and, with `WorkloadAffinity`, the index of workload groups with the results just
//! written. Pure data structures: the watch handlers of [`crate::controller`] feed them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::Cluster;
use karmada_api::work::{ResourceBinding, ResourceBindingSpec, ResourceBindingStatus};
use scheduler_core::snapshot::Snapshot;
use serde_json::Value;

use crate::metrics::IncomingEvent;
use crate::model::binding::{Binding, BindingKey, BindingKind, passes_filter};
use crate::model::decision::affinity_index;

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

/// What the event filter and the queue need, read leniently from raw JSON so that malformed
/// bindings are filtered exactly like good ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub passes: bool,
    /// `spec.schedulerName` names this scheduler (whatever the other filter rules say).
    pub owned: bool,
    pub generation: i64,
    pub priority: i32,
}

/// Summarise a raw binding for the event filter.
pub fn summarize(raw: &Value, scheduler_name: &str) -> Summary {
    let meta: ObjectMeta = raw
        .get("metadata")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default();
    let spec = raw.get("spec");
    let binding_scheduler = spec
        .and_then(|s| s.get("schedulerName"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(crate::config::options::DEFAULT_SCHEDULER_NAME);
    let suspended = spec
        .and_then(|s| s.pointer("/suspension/scheduling"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Summary {
        passes: passes_filter(&meta, binding_scheduler, suspended, scheduler_name),
        owned: binding_scheduler == scheduler_name,
        generation: meta.generation.unwrap_or_default(),
        priority: spec
            .and_then(|s| s.pointer("/schedulePriority/priority"))
            .and_then(Value::as_i64)
            .unwrap_or_default() as i32,
    }
}

/// client-go's filtering handler on an update: which handler runs.
pub fn binding_change(old: Option<&Summary>, new: Option<&Summary>) -> Option<IncomingEvent> {
    match (old, new) {
        (None, Some(n)) if n.passes => Some(IncomingEvent::BindingAdd),
        (Some(o), Some(n)) => match (o.passes, n.passes) {
            (true, true) if o.generation != n.generation => Some(IncomingEvent::BindingUpdate),
            (false, true) => Some(IncomingEvent::BindingAdd),
            _ => None,
        },
        _ => None,
    }
}

/// Cluster update → which cluster objects fan out to bindings.
pub fn cluster_update_fanout(old: &Cluster, new: &Cluster) -> Vec<Cluster> {
    if new.metadata.deletion_timestamp.is_some() && old.metadata.deletion_timestamp.is_none() {
        return vec![new.clone()];
    }
    let labels = |c: &Cluster| c.metadata.labels.clone().unwrap_or_default();
    if labels(old) != labels(new) || old.metadata.generation != new.metadata.generation {
        return vec![old.clone(), new.clone()];
    }
    Vec::new()
}

/// Whether a change of `cluster` requeues `binding` (the reconcile worker's rule).
pub fn requeue_on_cluster_change(
    binding: &Binding,
    cluster: &Cluster,
    scheduler_name: &str,
) -> bool {
    let Some(placement) = binding.spec.placement.as_ref() else {
        return false;
    };
    if binding.scheduler_name() != scheduler_name || binding.spec.scheduling_suspended() {
        return false;
    }
    let affinity = match &placement.cluster_affinities {
        Some(terms) => {
            if binding.status.scheduler_observed_generation != binding.generation() {
                return true;
            }
            let idx = affinity_index(terms, &binding.status.scheduler_observed_affinity_name);
            terms.get(idx).map(|t| &t.affinity)
        }
        None => placement.cluster_affinity.as_ref(),
    };
    affinity.is_none_or(|a| scheduler_core::selector::cluster_matches(cluster, a))
}

/// The caches the workers read.
#[derive(Default)]
pub struct Stores {
    /// Every binding's filter summary; the decoded object only where this scheduler may need
    /// it (see [`Context::upsert_binding`]). At 1,000 clusters a placed Duplicated binding holds
    /// hundreds of `spec.clusters` entries, and the other schedulers' bindings are most of the
    /// cache on a shared control plane.
    pub(crate) bindings: RwLock<HashMap<BindingKey, (Option<Cached>, Summary)>>,
    pub(crate) clusters: RwLock<BTreeMap<String, Arc<Cluster>>>,
    /// Bumped (under the `clusters` write lock) by every cluster change.
    pub(crate) cluster_version: AtomicU64,
    /// The snapshot of `clusters` at a `cluster_version`. Kept until a cluster changes, because
    /// scheduler-core memoises per-snapshot answers (filter sets, parsed resource summaries)
    /// that then serve every binding scheduled meanwhile.
    pub(crate) snapshot: Mutex<Option<(u64, Arc<Snapshot>)>>,
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

/// ResourceBindings whose new result was written but may not be in the cache yet (gate
/// `WorkloadAffinity`), so that the workload-affinity filters honour a result just
/// written before the watch delivers it.
#[derive(Default)]
pub struct AssigningCache(pub(crate) RwLock<HashMap<BindingKey, Arc<ResourceBinding>>>);

fn rv_number(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn to_rb(b: &Binding) -> ResourceBinding {
    ResourceBinding {
        api_version: karmada_api::work::API_VERSION.into(),
        kind: "ResourceBinding".into(),
        metadata: b.metadata.clone(),
        spec: b.spec.clone(),
        status: b.status.clone(),
    }
}

impl AssigningCache {
    /// A result patch of this RB succeeded; the server returned `stored`.
    pub fn written(&self, stored: &Binding) {
        if stored.kind == BindingKind::ResourceBinding {
            self.0
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(stored.key(), Arc::new(to_rb(stored)));
        }
    }

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
            m.insert(key, Arc::new(to_rb(b)));
        }
    }

    pub(crate) fn removed(&self, key: &BindingKey) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}

/// The workload (anti-)affinity index over the caches.
pub struct WorkloadIndex {
    pub stores: Arc<Stores>,
    pub assigning: Arc<AssigningCache>,
}

impl WorkloadIndex {
    pub(crate) fn by(
        &self,
        pick: impl Fn(&karmada_api::work::WorkloadAffinityGroups) -> &str,
        group: &str,
    ) -> Vec<Arc<ResourceBinding>> {
        self.stores
            .bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter_map(|(c, _)| match c {
                Some(Cached::Ok(b)) if b.kind == BindingKind::ResourceBinding => Some(b),
                _ => None,
            })
            .filter(|b| {
                b.spec
                    .workload_affinity_groups
                    .as_ref()
                    .is_some_and(|g| pick(g) == group)
            })
            .map(|b| Arc::new(to_rb(b)))
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

/// Decode one raw binding into the cache form.
pub fn decode_cached(kind: BindingKind, mut raw: Value) -> Cached {
    if let Some(meta) = raw.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    match Binding::decode(kind, raw.clone()) {
        Ok(b) => Cached::Ok(Arc::new(b)),
        Err(m) => {
            let status: ResourceBindingStatus = raw
                .get("status")
                .cloned()
                .and_then(|s| serde_json::from_value(s).ok())
                .unwrap_or_default();
            let resource = raw
                .pointer("/spec/resource")
                .cloned()
                .and_then(|r| serde_json::from_value(r).ok())
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
