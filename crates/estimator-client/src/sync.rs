//! Keeping the connections current: the Cluster events a daemon sees, and watches of the
//! estimator Services and their EndpointSlices, turned into [`ConnectionCache`] calls with
//! retries. Shared by karmada-scheduler and karmada-descheduler.
//!
//! Events are merged per cluster as a work queue merges them (the reference's
//! `scheduler-estimator` worker): a cluster has at most one task, which holds its name and
//! what was asked, never a copy of the object; events that come while it runs or waits to
//! retry only add to what it does next. A cluster whose estimator cannot be reached, and
//! whose object changes all the time (a Pull-mode member writes its own status), costs one
//! sleeping task and the dials its backoff allows, not a retry chain per event. The backoff
//! is the reference's rate limiter's (5 ms doubling, here to 5 min); a Service change that
//! moves the estimator cuts a wait short, since other addresses are worth a dial at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use component_base::metrics::WorkqueueMetrics;
use component_base::store::OnChange;
use component_base::watch::{WatchBackoff, drive, list_config};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::Cluster;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use tokio::sync::Notify;

use crate::cache::{ConnectionCache, EstablishError, PULL};

/// The current Cluster object of a name, if it still exists (a failed connection is retried
/// only while its cluster does).
pub type ClusterLookup = Arc<dyn Fn(&str) -> Option<Arc<Cluster>> + Send + Sync>;

/// First delay after a failed attempt; it doubles with each further failure.
const RETRY_BASE: Duration = Duration::from_millis(5);
/// Longest delay between attempts.
const RETRY_MAX: Duration = Duration::from_secs(300);
/// Added to a redial backoff's remaining time, so that the attempt after it finds it over.
const BACKOFF_MARGIN: Duration = Duration::from_millis(1);

/// The delay after `failures` consecutive failed attempts.
fn retry_delay(failures: u32) -> Duration {
    RETRY_BASE
        .saturating_mul(1 << failures.min(16))
        .min(RETRY_MAX)
}

/// What was asked of a cluster's connection since its task last took the asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Asks {
    /// A Cluster event: connect unless connected.
    ensure: bool,
    /// Its Service or EndpointSlices changed: resolve again, reconnect if the addresses moved.
    refresh: bool,
}

impl Asks {
    fn any(self) -> bool {
        self.ensure || self.refresh
    }

    fn merge(&mut self, other: Asks) {
        self.ensure |= other.ensure;
        self.refresh |= other.refresh;
    }
}

/// One cluster's pending work; the cluster has a task exactly while it has one of these.
struct Pending {
    asks: Asks,
    /// Wakes the task from a retry wait when a Service change asks for a refresh: other
    /// addresses are dialled at once, whatever the backoff of the old ones.
    wake: Arc<Notify>,
    /// Whether the cluster is in Pull mode, as its latest event said: all an attempt needs of
    /// the object.
    pull: bool,
    /// Where a retry reads whether the cluster still exists (from the Cluster events).
    current: Option<ClusterLookup>,
    /// When a Cluster event was queued and not yet taken (the workqueue metrics).
    queued: Option<Instant>,
}

/// What one attempt takes from a cluster's [`Pending`].
struct Taken {
    asks: Asks,
    wake: Arc<Notify>,
    pull: bool,
    current: Option<ClusterLookup>,
    queued: Option<Instant>,
}

/// The estimator connections, driven by Cluster and Service events.
pub struct EstimatorSync {
    cache: Arc<ConnectionCache>,
    /// Clusters with work pending, by name (see the module).
    pending: Mutex<HashMap<String, Pending>>,
    /// The workqueue metrics of the reference's `scheduler-estimator` worker, which gets the
    /// cluster events that [`ensure`](Self::ensure) handles.
    worker: Arc<WorkqueueMetrics>,
}

impl EstimatorSync {
    /// Sync over `cache`; `worker` counts the cluster events, as the reference's
    /// `scheduler-estimator` worker queue.
    pub fn new(cache: Arc<ConnectionCache>, worker: Arc<WorkqueueMetrics>) -> Arc<Self> {
        Arc::new(Self {
            cache,
            pending: Default::default(),
            worker,
        })
    }

    /// The connections.
    pub fn cache(&self) -> &Arc<ConnectionCache> {
        &self.cache
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A Cluster was deleted: drop its connection. A task waiting to retry finds it gone.
    pub fn cluster_deleted(&self, name: &str) {
        self.worker.process(|| self.cache.on_cluster_deleted(name));
        if let Some(p) = self.pending().get_mut(name) {
            p.asks.ensure = false;
            // Its queued event is done with: taken out of the queue's depth.
            if let Some(at) = p.queued.take() {
                self.worker.finished(self.worker.started(Some(at)));
            }
        }
    }

    /// Watch the estimator Services in `namespace` and the EndpointSlices of those named
    /// `<prefix>-*`, re-resolving a Service's connection on every change. The returned tasks
    /// run until aborted.
    pub fn watch_services(
        self: &Arc<Self>,
        client: kube::Client,
        namespace: &str,
        prefix: &str,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        let ns = namespace.to_string();
        let api: Api<Service> = Api::namespaced(client.clone(), &ns);
        let e1 = self.clone();
        tasks.push(tokio::spawn(async move {
            let stream = watcher::watcher(api, list_config()).backoff(WatchBackoff::default());
            let changed = move |name: &String| e1.service_changed(&ns, name);
            let services = OnChange::new(
                |s: &Service| s.metadata.name.clone().unwrap_or_default(),
                changed,
            );
            drive(stream, "services", services).await;
        }));
        // Headless estimator Services resolve through their EndpointSlices: follow those too,
        // so hand-made endpoints that move are followed like an ExternalName that changes.
        // Without `watch` on endpointslices (an older RBAC) the watch only logs and retries.
        let ns = namespace.to_string();
        let prefix = format!("{prefix}-");
        let api: Api<EndpointSlice> = Api::namespaced(client, &ns);
        let est = self.clone();
        tasks.push(tokio::spawn(async move {
            let cfg = list_config().labels(SERVICE_NAME_LABEL);
            let stream = watcher::watcher(api, cfg).backoff(WatchBackoff::default());
            // Added, changed or gone: the same re-resolution of the slice's Service.
            let changed = move |key: &String| {
                if let Some(svc) = slice_service(key, &prefix) {
                    est.service_changed(&ns, svc);
                }
            };
            let slices = OnChange::new(slice_key, changed);
            drive(stream, "endpointslices", slices).await;
        }));
        tasks
    }

    /// An estimator Service changed: re-resolve and reconnect. When the new address does not
    /// answer yet (an estimator being moved), keep retrying with backoff until it does, the
    /// Service changes again or its cluster is gone; the old connection stays in use
    /// meanwhile. Services that name no cluster cost nothing.
    pub fn service_changed(self: &Arc<Self>, namespace: &str, name: &str) {
        let Some(cluster) = self.cache.options().cluster_of_service(namespace, name) else {
            return;
        };
        let asks = Asks {
            refresh: true,
            ..Default::default()
        };
        self.enqueue(cluster, asks, None);
    }

    /// Connect (or keep) the cluster's estimator; retry failures with backoff while the
    /// cluster exists (the reference's `scheduler-estimator` worker). Call it on the cluster's
    /// add or update event: the cluster exists, even if it was deleted before.
    pub fn ensure(self: &Arc<Self>, cluster: &Cluster, current: &ClusterLookup) {
        let name = cluster.metadata.name.as_deref().unwrap_or_default();
        self.cache.forget_deletion(name);
        let asks = Asks {
            ensure: true,
            ..Default::default()
        };
        let pull = cluster.spec.sync_mode == PULL;
        self.enqueue(name, asks, Some((pull, current)));
    }

    /// Adds `asks` to the cluster's pending work, starting its task if it has none.
    fn enqueue(self: &Arc<Self>, name: &str, asks: Asks, event: Option<(bool, &ClusterLookup)>) {
        let mut pending = self.pending();
        let fresh = !pending.contains_key(name);
        let p = pending.entry(name.to_string()).or_insert_with(|| Pending {
            asks: Asks::default(),
            wake: Arc::default(),
            pull: false,
            current: None,
            queued: None,
        });
        p.asks.merge(asks);
        if asks.refresh {
            p.wake.notify_one();
        }
        if let Some((pull, current)) = event {
            p.pull = pull;
            p.current.get_or_insert_with(|| current.clone());
            if p.queued.is_none() {
                p.queued = Some(self.worker.added());
            }
        }
        drop(pending);
        if fresh {
            tokio::spawn(self.clone().work(name.to_string()));
        }
    }

    /// The cluster's task: takes what was asked, attempts it, and waits after a failure,
    /// until nothing is asked; then it ends and forgets the cluster.
    async fn work(self: Arc<Self>, name: String) {
        let mut failures = 0u32;
        while let Some(t) = self.take(&name) {
            let token = t.queued.map(|at| self.worker.started(Some(at)));
            let outcome = self.attempt(&name, &t, failures > 0).await;
            if let Some(token) = token {
                self.worker.finished(token);
            }
            let wait = match outcome {
                Ok(()) | Err(EstablishError::Deleted(_)) => {
                    failures = 0;
                    continue;
                }
                // Not dialled: the backoff of the last failed dial decides when to try.
                Err(EstablishError::BackingOff { retry_in, .. }) => retry_in + BACKOFF_MARGIN,
                Err(e) => {
                    failures += 1;
                    if t.asks.ensure {
                        self.worker.retried();
                    }
                    let delay = retry_delay(failures);
                    tracing::debug!(cluster = %name, "estimator connection failed (retry in {delay:?}): {e}");
                    delay
                }
            };
            self.wait(&name, &t.wake, wait).await;
            self.requeue(&name, t.asks);
        }
    }

    /// Waits `wait` before the next attempt, or less if a Service change asks for a refresh
    /// meanwhile (a wake-up left from a refresh already taken does not count).
    async fn wait(&self, name: &str, wake: &Notify, wait: Duration) {
        let until = tokio::time::Instant::now() + wait;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return,
                _ = wake.notified() => {
                    let refresh = self.pending().get(name).is_some_and(|p| p.asks.refresh);
                    if refresh {
                        return;
                    }
                }
            }
        }
    }

    /// Takes the cluster's asks, or forgets it when nothing is asked.
    fn take(&self, name: &str) -> Option<Taken> {
        let mut pending = self.pending();
        let p = pending.get_mut(name)?;
        if !p.asks.any() {
            pending.remove(name);
            return None;
        }
        Some(Taken {
            asks: std::mem::take(&mut p.asks),
            wake: p.wake.clone(),
            pull: p.pull,
            current: p.current.clone(),
            queued: p.queued.take(),
        })
    }

    /// Puts back what a failed attempt was asked, merged with what came meanwhile.
    fn requeue(&self, name: &str, asks: Asks) {
        if let Some(p) = self.pending().get_mut(name) {
            p.asks.merge(asks);
            if asks.ensure && p.queued.is_none() {
                p.queued = Some(self.worker.added());
            }
        }
    }

    /// One attempt at what was asked. A retry connects only while the cluster exists (its
    /// Pull mode read again); an attempt that runs after the cluster's deletion (an add
    /// event's attempt overtaken by the delete event) makes nothing.
    async fn attempt(&self, name: &str, t: &Taken, retry: bool) -> Result<(), EstablishError> {
        let mut pull = t.pull;
        if t.asks.ensure {
            if retry && let Some(current) = &t.current {
                match current(name) {
                    Some(c) => pull = c.spec.sync_mode == PULL,
                    None => return Err(EstablishError::Deleted(name.to_string())),
                }
            }
            self.cache.ensure_existing(name, pull).await?;
        }
        if t.asks.refresh {
            let namespace = &self.cache.options().service_namespace;
            let service = self.cache.options().service_name(name);
            self.cache.on_service_changed(namespace, &service).await?;
        }
        Ok(())
    }

    /// Clusters with work pending (tests).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.pending().len()
    }
}

/// The label that ties an EndpointSlice to its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// `<service>/<slice>`: the watch hands only keys to removals, and a removal must still
/// know which Service to re-resolve.
fn slice_key(s: &EndpointSlice) -> String {
    let service = s
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SERVICE_NAME_LABEL))
        .map(String::as_str)
        .unwrap_or_default();
    format!(
        "{service}/{}",
        s.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The Service of a slice key, when it is an estimator Service (`<prefix>-<cluster>`).
fn slice_service<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    let (service, _) = key.split_once('/')?;
    service.starts_with(prefix).then_some(service)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_slices_map_to_their_estimator_service() {
        let slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "karmada-scheduler-estimator-m1-x2k9", "namespace": "karmada-system",
                         "labels": {"kubernetes.io/service-name": "karmada-scheduler-estimator-m1"}},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap();
        let key = slice_key(&slice);
        let prefix = "karmada-scheduler-estimator-";
        assert_eq!(
            slice_service(&key, prefix),
            Some("karmada-scheduler-estimator-m1")
        );
        assert_eq!(slice_service("kubernetes/kubernetes-abcde", prefix), None);
        assert_eq!(slice_service("no-slash", prefix), None);
    }

    /// A source that counts its lookups: every connection attempt that is not refused by
    /// the redial backoff looks its Service up once.
    struct Counting(crate::InMemoryServiceSource, std::sync::atomic::AtomicUsize);

    impl crate::ServiceSource for Counting {
        fn lookup<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
        ) -> scheduler_core::estimator::BoxFuture<
            'a,
            Result<crate::ServiceLookup, crate::source::LookupError>,
        > {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.0.lookup(namespace, name)
        }
    }

    /// A cache whose every cluster has an estimator Service that cannot be resolved (no
    /// port), so connecting fails at once, without the network; and its lookup count.
    fn failing_sync(
        clusters: usize,
    ) -> (
        Arc<EstimatorSync>,
        Arc<Counting>,
        component_base::metrics::ComponentMetrics,
    ) {
        let services = (0..clusters).map(|i| {
            serde_json::from_value::<Service>(json!({
                "metadata": {"name": format!("karmada-scheduler-estimator-m{i}"), "namespace": "karmada-system"},
                "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.1"}
            }))
            .unwrap()
        });
        let source = Arc::new(Counting(
            crate::InMemoryServiceSource::with_objects(services, []),
            Default::default(),
        ));
        let cache = Arc::new(ConnectionCache::new(Default::default(), source.clone()));
        let metrics = component_base::metrics::ComponentMetrics::new();
        let sync = EstimatorSync::new(cache, metrics.workqueue("scheduler-estimator"));
        (sync, source, metrics)
    }

    fn lookups(source: &Counting) -> usize {
        source.1.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Clusters as the daemon's cache holds them, for the sync's lookups.
    #[derive(Clone, Default)]
    struct Live(Arc<Mutex<HashMap<String, Arc<Cluster>>>>);

    impl Live {
        fn lookup(&self) -> ClusterLookup {
            let live = self.0.clone();
            Arc::new(move |name: &str| live.lock().unwrap().get(name).cloned())
        }

        fn add(&self, name: &str) -> Arc<Cluster> {
            let cluster = Arc::new(Cluster::new(name, Default::default()));
            self.0.lock().unwrap().insert(name.into(), cluster.clone());
            cluster
        }
    }

    /// Clusters added and deleted, their connections failing, leave no entry, pending work
    /// or dial lock, also when the deletion comes before the connection attempt started (a
    /// spawned attempt that ran after the deletion used to make the entry again, for good).
    #[tokio::test(start_paused = true)]
    async fn deleted_clusters_leave_no_connection_state() {
        let n = 2_000;
        let (sync, _, metrics) = failing_sync(n);
        let live = Live::default();
        let lookup = live.lookup();
        for i in 0..n {
            let name = format!("m{i}");
            let cluster = live.add(&name);
            sync.ensure(&cluster, &lookup);
            if i % 2 == 0 {
                // Deleted before its attempt ran.
                live.0.lock().unwrap().remove(&name);
                sync.cluster_deleted(&name);
            }
        }
        // Every attempt ran and failed; the survivors wait to retry.
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(sync.cache.held().0, n / 2);
        assert_eq!(sync.held(), n / 2);
        // Now the others go too, while their retries wait.
        for i in (1..n).step_by(2) {
            let name = format!("m{i}");
            live.0.lock().unwrap().remove(&name);
            sync.cluster_deleted(&name);
        }
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(sync.cache.held(), (0, 0));
        assert_eq!(sync.held(), 0);
        assert!(sync.cache.clusters().is_empty());
        // Every queued event was taken out of the queue's depth again.
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                r#"workqueue_depth{controller="scheduler-estimator",name="scheduler-estimator",priority=""} 0"#
            ),
            "{text}"
        );
    }

    /// Changes of Services that name no cluster, or a cluster the cache does not know, leave
    /// nothing behind.
    #[tokio::test(start_paused = true)]
    async fn services_that_come_and_go_leave_nothing() {
        let (sync, source, _) = failing_sync(0);
        for i in 0..10_000 {
            sync.service_changed("karmada-system", &format!("svc-{i}"));
            sync.service_changed(
                "karmada-system",
                &format!("karmada-scheduler-estimator-x{i}"),
            );
        }
        assert!(sync.held() <= 10_000);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(sync.held(), 0);
        assert_eq!(lookups(&source), 0, "unknown clusters are not looked up");
    }

    /// A cluster whose estimator cannot be reached and whose object changes twice a second
    /// (a Pull-mode member writing its status) has one task, whatever the number of events,
    /// and is dialled as often as the redial backoff allows, not once per event; a deletion
    /// ends its task.
    #[tokio::test(start_paused = true)]
    async fn events_for_an_unreachable_cluster_merge_into_one_task() {
        let (sync, source, _) = failing_sync(1);
        let live = Live::default();
        let lookup = live.lookup();
        let cluster = live.add("m0");
        for _ in 0..120 {
            sync.ensure(&cluster, &lookup);
            assert_eq!(sync.held(), 1);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // 60 s of the backoff (5 ms doubling): attempts after 0, 10 ms, 30 ms, ... 20.47 s and
        // 40.95 s, 13 in all, whatever the number of events.
        let dialled = lookups(&source);
        assert_eq!(dialled, 13, "{dialled} attempts in 60 s");
        live.0.lock().unwrap().remove("m0");
        sync.cluster_deleted("m0");
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(sync.held(), 0);
        assert_eq!(lookups(&source), dialled, "no attempt after the deletion");
    }

    /// A Service change cuts a long retry wait short: its addresses may be new, and are worth
    /// a dial at once.
    #[tokio::test(start_paused = true)]
    async fn a_service_change_cuts_a_retry_wait_short() {
        let (sync, source, _) = failing_sync(1);
        let live = Live::default();
        let cluster = live.add("m0");
        sync.ensure(&cluster, &live.lookup());
        // 14 failures in 100 s: the next retry is 81.92 s after the last.
        tokio::time::sleep(Duration::from_secs(100)).await;
        let before = lookups(&source);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(lookups(&source), before, "waiting");
        sync.service_changed("karmada-system", "karmada-scheduler-estimator-m0");
        tokio::time::sleep(Duration::from_millis(1)).await;
        // The refresh (and the connection asked before it) tried at once.
        assert!(
            lookups(&source) > before,
            "the change was not followed at once"
        );
        assert_eq!(sync.held(), 1, "still one task");
    }

    /// Changes of one estimator Service while it cannot be followed make one task, which
    /// ends once its cluster is gone.
    #[tokio::test(start_paused = true)]
    async fn service_changes_merge_into_one_task() {
        let (sync, source, _) = failing_sync(1);
        let live = Live::default();
        let cluster = live.add("m0");
        sync.ensure(&cluster, &live.lookup());
        tokio::time::sleep(Duration::from_millis(1)).await;
        let service = "karmada-scheduler-estimator-m0";
        for _ in 0..1_000 {
            sync.service_changed("karmada-system", service);
        }
        assert_eq!(sync.held(), 1);
        tokio::time::sleep(Duration::from_secs(5)).await;
        let seen = lookups(&source);
        assert!(seen < 20, "{seen} lookups for 1,000 changes");
        live.0.lock().unwrap().remove("m0");
        sync.cluster_deleted("m0");
        // Its cluster is gone: the next retry finds nothing to reconnect, and stops.
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(sync.held(), 0);
    }
}
