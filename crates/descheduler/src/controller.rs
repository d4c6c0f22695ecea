//! The descheduler's loop: caches of ResourceBindings and Clusters fed by watches (component-base's
//! [`Writer`]s), estimator connections kept current from Clusters, Services and EndpointSlices,
//! and a pass every `--descheduling-interval` over the candidate bindings ([`crate::rules`]).
//!
//! One binding at a time is one estimator fan-out (`GetUnschedulableReplicas` for its clusters
//! with fewer ready replicas than assigned) and at most one write, the reference's: the cached
//! binding with its new `spec.clusters`, PUT with the resourceVersion the decision was made on,
//! so a binding changed meanwhile is never overwritten. (A JSON merge patch of `spec.clusters`
//! costs the API server more: it encodes the stored binding, merges and decodes it again.) A
//! refused write is decided again from the newer object a few times within the pass; the next
//! pass takes up whatever is left.
//!
//! A pass runs under the [`Permit`] of the leadership term it started in; its writes go
//! through the [`WriteGate`], which checks the permit right before each is sent, so a pass
//! that outlived its term (the process was frozen, the lease lapsed) stops writing at once
//! and leaves the rest to whoever leads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use component_base::BoxFuture;
use component_base::api::{ApiFailure, bounded};
use component_base::cancel::CancellationToken;
use component_base::events::{EventSink, PendingEvent, binding_references};
use component_base::fence::{Fence, Permit};
use component_base::key::ObjectKey;
use component_base::metrics::{ComponentMetrics, WorkqueueMetrics};
use component_base::serve::Readiness;
use component_base::store::{Reflect, Store, WatchEnded, Writer};
use component_base::watch::{RawObject, key_of, until_ready, watch_all};
use component_base::write::{ObjectApi, WriteGate};
use estimator_client::cluster_watch::watch_clusters;
use estimator_client::sync::{ClusterLookup, EstimatorSync};
use estimator_client::{ConnectionCache, SchedulerEstimator};
use futures::StreamExt as _;
use karmada_api::Cluster;
use karmada_api::work::ResourceBinding;
use kube::api::{Api, ApiResource, PostParams};

use crate::options::{COMPONENT, Options};
use crate::rules::{self, Skip};

/// Event reasons of the reference.
pub const REASON_SUCCEED: &str = "DescheduleBindingSucceed";
pub const REASON_FAILED: &str = "DescheduleBindingFailed";
/// Workqueue names of the reference (they label the `workqueue_*` metrics).
pub const DESCHEDULER_QUEUE: &str = "descheduler";
pub const ESTIMATOR_QUEUE: &str = "scheduler-estimator";
/// Tries of one binding within a pass when its write is refused (a newer object, a server
/// that did not answer).
const WRITE_TRIES: u32 = 4;
/// Longest wait for one write.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// An interval of 0 asks for back-to-back passes; this pause keeps an idle loop from spinning.
const MIN_PAUSE: Duration = Duration::from_millis(100);

/// What a pass needs: the caches, the estimator, the write gate and the recorder.
pub struct Descheduler {
    threshold: Duration,
    /// The binding cache's one writer, shared by its watch and this descheduler's own writes.
    cache: Arc<Mutex<Bindings>>,
    bindings: Store<ObjectKey, Arc<Cached>>,
    estimator: SchedulerEstimator,
    /// The one way to the API for its writes.
    gate: WriteGate<BindingApi>,
    events: Arc<dyn EventSink>,
    queue: Arc<WorkqueueMetrics>,
}

/// The descheduler's API: component-base's [`ObjectApi`] of ResourceBindings.
pub type BindingApi = dyn ObjectApi<ObjectKey, ResourceBinding>;

/// ResourceBindings over the kube client, reachable only through its [`WriteGate`].
pub struct KubeBindings(kube::Client);

impl KubeBindings {
    pub fn gate(client: kube::Client) -> WriteGate<BindingApi> {
        WriteGate::new(Arc::new(Self(client)))
    }
}

/// It only replaces: the descheduler reads bindings from its watch and never patches them
/// (its ClusterRole grants `update`, not `get` or `patch`).
impl ObjectApi<ObjectKey, ResourceBinding> for KubeBindings {
    fn replace<'a>(
        &'a self,
        key: &'a ObjectKey,
        object: ResourceBinding,
    ) -> BoxFuture<'a, Result<ResourceBinding, ApiFailure>> {
        Box::pin(async move {
            let api: Api<ResourceBinding> = Api::namespaced(self.0.clone(), &key.namespace);
            let what = || format!("updating ResourceBinding {key}");
            let params = PostParams::default();
            bounded(
                what,
                REQUEST_TIMEOUT,
                api.replace(&key.name, &params, &object),
            )
            .await
        })
    }
}

/// A binding as the cache keeps it: what the rules read, with `status.aggregatedStatus`
/// reduced to the ready replicas per cluster when it is cached.
///
/// The aggregated status is the bulk of a binding spread over many clusters (an entry per
/// cluster, each with its workload status) and the rules only ever read `readyReplicas` from
/// it. Kept whole, 1,000 bindings over 100 clusters peaked 18 MiB higher in the descheduler
/// bench on the day this cache came in (81.6 against 63.3 MiB). Reduced once
/// here, which also spares each pass decoding every entry's status again.
#[derive(Debug)]
struct Cached {
    /// The binding with an empty `status.aggregatedStatus`.
    binding: ResourceBinding,
    /// `readyReplicas` per cluster ([`rules::ready_replicas`]).
    ready: HashMap<String, i32>,
    /// Entries whose `readyReplicas` could not be read, reported on every pass.
    problems: Vec<String>,
}

impl Cached {
    fn new(mut binding: ResourceBinding) -> Self {
        // Most bindings are of kinds a pass never looks at: their statuses are not read.
        let (ready, problems) = if rules::is_supported_kind(&binding) {
            rules::ready_replicas(&binding)
        } else {
            Default::default()
        };
        binding.status.aggregated_status = Vec::new();
        Self {
            binding,
            ready,
            problems,
        }
    }
}

/// The binding cache, as its watch and the descheduler's own writes change it.
struct Bindings(Writer<ObjectKey, Arc<Cached>>);

/// A binding that does not decode is logged and left out.
impl Reflect<RawObject> for Bindings {
    fn upsert(&mut self, raw: RawObject) {
        let key = key_of(&raw);
        match karmada_api::from_json_str::<ResourceBinding>(raw.json()) {
            Ok(rb) => {
                self.0.insert(key, Arc::new(Cached::new(rb)));
            }
            Err(e) => {
                tracing::error!(
                    binding = %key,
                    "skipping a ResourceBinding that does not decode: {}",
                    karmada_api::excerpt(&e.to_string(), 512)
                );
                self.0.remove(&key);
            }
        }
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.remove(key);
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.keys(|_| true)
    }

    fn synced(&mut self) {
        self.0.mark_ready();
    }
}

/// The result of one binding in one pass (for logs and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Gone, being deleted, or not a candidate any more.
    Skipped,
    /// Every cluster has its replicas ready, or none can be given back.
    Unchanged,
    /// `spec.clusters` was written; `total` replicas were given back.
    Descheduled { total: i32 },
    /// The write failed (after its tries).
    Failed(String),
    /// Not written: this replica's lease lapsed during the pass.
    Fenced,
}

impl Descheduler {
    /// A descheduler over these parts (its caches start empty).
    pub fn new(
        threshold: Duration,
        estimator: SchedulerEstimator,
        gate: WriteGate<BindingApi>,
        events: Arc<dyn EventSink>,
        queue: Arc<WorkqueueMetrics>,
    ) -> Self {
        let cache = Bindings(Writer::default());
        Self {
            threshold,
            bindings: cache.0.store(),
            cache: Arc::new(Mutex::new(cache)),
            estimator,
            gate,
            events,
            queue,
        }
    }

    /// The keys of the bindings a pass looks at (the reference's `FilterBindings`), sorted.
    pub fn candidates(&self) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> = self.bindings.read(|bindings| {
            bindings
            .iter()
            .filter(|(key, cached)| match rules::is_candidate(&cached.binding) {
                Ok(()) => true,
                Err(Skip::BadPlacement(e)) => {
                    tracing::error!(binding = %key, "Failed to get applied placement when validating: metadata.annotations[policy.karmada.io/applied-placement]: {e}");
                    false
                }
                Err(_) => false,
            })
            .map(|(k, _)| k.clone())
            .collect()
        });
        keys.sort();
        keys
    }

    /// One pass over every candidate, `concurrency` bindings at a time.
    pub async fn pass(&self, concurrency: usize, permit: &Permit) -> Vec<(ObjectKey, Outcome)> {
        let keys = self.candidates();
        let added: Vec<_> = keys.iter().map(|_| self.queue.added()).collect();
        futures::stream::iter(keys.into_iter().zip(added))
            .map(|(key, added)| async move {
                // Events of earlier bindings are written before this one adds its own: late
                // when the API server falls behind, never dropped.
                self.events.room().await;
                let token = self.queue.started(Some(added));
                let outcome = self.deschedule(&key, permit).await;
                self.queue.finished(token);
                if matches!(outcome, Outcome::Failed(_)) {
                    self.queue.retried();
                }
                (key, outcome)
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await
    }

    /// Deschedule one binding, deciding again from the cache when a write is refused.
    pub async fn deschedule(&self, key: &ObjectKey, permit: &Permit) -> Outcome {
        let mut pause = Duration::from_millis(100);
        let mut tries = 0;
        loop {
            tries += 1;
            match self.attempt(key, permit).await {
                Err(failure) if failure.is_fenced() => return Outcome::Fenced,
                Err(failure)
                    if tries < WRITE_TRIES && (failure.is_conflict() || failure.is_transient()) =>
                {
                    tracing::info!(binding = %key, "descheduling write refused (try {tries} of {WRITE_TRIES}), deciding again: {failure}");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                Err(failure) => return Outcome::Failed(failure.message),
                Ok(outcome) => return outcome,
            }
        }
    }

    async fn attempt(&self, key: &ObjectKey, permit: &Permit) -> Result<Outcome, ApiFailure> {
        permit.check()?;
        let Some(cached) = self.bindings.get(key) else {
            tracing::info!("ResourceBinding({key}) in work queue no longer exists, ignore.");
            return Ok(Outcome::Skipped);
        };
        let rb = &cached.binding;
        if rb.metadata.deletion_timestamp.is_some() {
            tracing::info!("ResourceBinding({key}) in work queue is being deleted, ignore.");
            return Ok(Outcome::Skipped);
        }
        if rules::is_candidate(rb).is_err() {
            return Ok(Outcome::Skipped);
        }
        for problem in &cached.problems {
            let message = format!("{problem}; the cluster's ready replicas are taken as unknown");
            tracing::warn!(binding = %key, "{message}");
            self.event(rb, true, &message);
        }
        let mut statuses = rules::replica_status(rb, &cached.ready);
        let undesired = rules::undesired(&statuses);
        if undesired.is_empty() {
            return Ok(Outcome::Unchanged);
        }
        let names: Vec<String> = undesired
            .iter()
            .map(|&i| statuses[i].cluster.clone())
            .collect();
        let answer = match self
            .estimator
            .get_unschedulable_replicas(&names, &rb.spec.resource, self.threshold)
            .await
        {
            Ok(estimates) => Some(estimates),
            Err(e) => {
                tracing::error!(binding = %key, "Max cluster unschedulable replicas error: {}", e.0);
                None
            }
        };
        rules::merge_answers(&mut statuses, &undesired, &[answer]);
        tracing::debug!(binding = %key, "Unschedulable result of resource({key}): {statuses:?}");
        let Some(plan) = rules::plan(&rb.spec.clusters, &statuses) else {
            return Ok(Outcome::Unchanged);
        };
        let rv = rb.metadata.resource_version.as_deref().unwrap_or_default();
        // The reference's write: the cached binding with the new `spec.clusters`, PUT with the
        // resourceVersion the decision was made on (a binding changed meanwhile is refused with
        // a conflict, never overwritten). Its `status` (cached without the aggregated status)
        // is not written: the API server keeps the stored one, as `status` is a subresource.
        let mut updated = rb.clone();
        updated.spec.clusters = plan.clusters;
        // The gate checks the permit right before the request: the decision may have
        // outlived the term it was made in.
        match self.gate.under(permit).replace(key, updated).await {
            Ok(updated) => {
                self.event(&updated, false, &plan.message);
                // The cache follows at once, so that a pass right after this one decides on
                // what was written, unless the watch already brought something newer.
                let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
                cache.0.write(|bindings| match bindings.get_mut(key) {
                    Some(c) if c.binding.metadata.resource_version.as_deref() == Some(rv) => {
                        *c = Arc::new(Cached::new(updated))
                    }
                    _ => {}
                });
                drop(cache);
                tracing::info!(binding = %key, "{}", plan.message);
                Ok(Outcome::Descheduled { total: plan.total })
            }
            // Not sent: nothing to tell, the binding is left to whoever leads.
            Err(fenced) if fenced.is_fenced() => Err(fenced),
            Err(failure) => {
                tracing::error!(binding = %key, "descheduling write failed: {failure}");
                self.event(rb, true, &failure.message);
                Err(failure)
            }
        }
    }

    /// The reference records each result on the binding and on its workload.
    fn event(&self, rb: &ResourceBinding, warning: bool, message: &str) {
        let reason = if warning {
            REASON_FAILED
        } else {
            REASON_SUCCEED
        };
        for involved in binding_references(ResourceBinding::KIND, &rb.metadata, &rb.spec.resource) {
            self.events
                .record(PendingEvent::on(involved, warning, reason, message));
        }
    }
}

/// Resolves once both caches hold their first complete list.
async fn caches_ready<A, B>(
    bindings: &Store<ObjectKey, A>,
    clusters: &Store<ObjectKey, B>,
) -> Result<(), WatchEnded> {
    bindings.wait_until_ready().await?;
    clusters.wait_until_ready().await
}

/// Run until `stop`: watches and caches throughout, passes only while `leading`.
pub async fn run(
    opts: Arc<Options>,
    client: kube::Client,
    metrics: Arc<ComponentMetrics>,
    ready: Readiness,
    fence: Fence,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let cache = Arc::new(ConnectionCache::over_api(
        opts.estimator.to_options(false),
        client.clone(),
    ));
    metrics.register(|r| cache.register_metrics(r));
    let sync = EstimatorSync::new(cache.clone(), metrics.workqueue(ESTIMATOR_QUEUE));
    let recorder = component_base::events::start(client.clone(), COMPONENT.to_string());
    let d = Arc::new(Descheduler::new(
        opts.unschedulable_threshold.to_std(),
        SchedulerEstimator::new(cache),
        KubeBindings::gate(client.clone()),
        Arc::new(recorder),
        metrics.workqueue(DESCHEDULER_QUEUE),
    ));

    let resource = ApiResource::erase::<ResourceBinding>(&());
    let bindings = watch_all(client.clone(), &resource, d.cache.clone());
    let clusters = Writer::<ObjectKey, Arc<Cluster>>::default();
    let cluster_store = clusters.store();
    let lookup = cluster_store.clone();
    let current: ClusterLookup = Arc::new(move |name: &str| lookup.get(&ObjectKey::new("", name)));
    let clusters = watch_clusters(client.clone(), Some(sync.clone()), current, clusters);
    let mut watches = vec![bindings, clusters];
    watches.extend(sync.watch_services(
        client.clone(),
        &opts.estimator.service_namespace,
        &opts.estimator.service_prefix,
    ));

    tokio::select! {
        r = until_ready(caches_ready(&d.bindings, &cluster_store), &mut watches) => r?,
        _ = stop.cancelled() => {
            watches.iter().for_each(|w| w.abort());
            return Ok(());
        }
    }
    ready.set(true);
    let concurrency = usize::try_from(opts.concurrent_syncs).unwrap_or(1).max(1);
    let interval = opts.descheduling_interval.to_std().max(MIN_PAUSE);
    tracing::info!(
        "caches synced; descheduling every {interval:?}, {concurrency} binding(s) at a time"
    );
    loop {
        let permit = tokio::select! {
            p = fence.wait_permit() => p,
            _ = stop.cancelled() => break,
        };
        let outcomes = tokio::select! {
            o = d.pass(concurrency, &permit) => o,
            _ = stop.cancelled() => break,
        };
        let descheduled = outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Descheduled { .. }))
            .count();
        tracing::debug!(
            "descheduling pass: {} candidate(s), {descheduled} descheduled",
            outcomes.len()
        );
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.cancelled() => break,
        }
    }
    watches.iter().for_each(|w| w.abort());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_binding_keeps_only_the_ready_replicas_of_its_aggregated_status() {
        let rb: ResourceBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "b", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                     "clusters": [{"name": "c1", "replicas": 3}, {"name": "c2", "replicas": 2}]},
            "status": {"aggregatedStatus": [
                {"clusterName": "c1", "applied": true,
                 "status": {"replicas": 3, "readyReplicas": 1}},
                {"clusterName": "c2", "status": {"readyReplicas": "2"}},
                {"clusterName": "c3"}
            ]}
        }))
        .unwrap();
        let (ready, problems) = rules::ready_replicas(&rb);
        let cached = Cached::new(rb.clone());
        assert_eq!(cached.ready, ready);
        assert_eq!(cached.ready, HashMap::from([("c1".to_string(), 1)]));
        assert_eq!(cached.problems, problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(cached.binding.status.aggregated_status.is_empty());
        // Everything else the rules and the writes read is kept.
        let mut expected = rb.clone();
        expected.status.aggregated_status.clear();
        assert_eq!(cached.binding, expected);

        // A kind the passes skip keeps nothing of its status and reads none of it.
        let mut other = rb;
        other.spec.resource.kind = "ConfigMap".into();
        let other = Cached::new(other);
        assert!(other.ready.is_empty() && other.problems.is_empty());
        assert!(other.binding.status.aggregated_status.is_empty());
    }
}
