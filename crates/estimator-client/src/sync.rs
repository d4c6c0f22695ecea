//! Keeping the connections current: the Cluster events a daemon sees, and watches of the
//! estimator Services and their EndpointSlices, turned into [`ConnectionCache`] calls with
//! retries. Shared by karmada-scheduler and karmada-descheduler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use component_base::metrics::WorkqueueMetrics;
use component_base::store::OnChange;
use component_base::watch::{WatchBackoff, drive, list_config};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::Cluster;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use tokio::sync::watch as tokio_watch;

use crate::cache::{ConnectionCache, EstablishError};

/// The current Cluster object of a name, if it still exists (a failed connection is retried
/// only while its cluster does).
pub type ClusterLookup = Arc<dyn Fn(&str) -> Option<Arc<Cluster>> + Send + Sync>;

/// The estimator connections, driven by Cluster and Service events.
pub struct EstimatorSync {
    cache: Arc<ConnectionCache>,
    /// Consecutive failed connection attempts per cluster, while its retries run.
    failures: Mutex<HashMap<String, u32>>,
    /// Per Service name, the number of its latest change while that change is being
    /// followed (a retry of an older change stops); dropped when the latest is done, so
    /// Services that come and go leave nothing.
    service_seq: Mutex<HashMap<String, u64>>,
    /// Numbers Service changes, across all names: a number is never reused, so a retry
    /// can tell its change from a later one even after the entry was dropped and made again.
    next_change: AtomicU64,
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
            failures: Default::default(),
            service_seq: Default::default(),
            next_change: AtomicU64::new(0),
            worker,
        })
    }

    /// The connections.
    pub fn cache(&self) -> &Arc<ConnectionCache> {
        &self.cache
    }

    /// A Cluster was deleted: drop its connection.
    pub fn cluster_deleted(&self, name: &str) {
        self.worker.process(|| self.cache.on_cluster_deleted(name));
        self.forget_failures(name);
    }

    fn forget_failures(&self, name: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
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
        let (tx, _rx) = tokio_watch::channel(false);
        let e1 = self.clone();
        tasks.push(tokio::spawn(async move {
            let stream = watcher::watcher(api, list_config()).backoff(WatchBackoff::default());
            let changed = move |name: &String| e1.service_changed(ns.clone(), name.clone());
            let services = OnChange::new(
                |s: &Service| s.metadata.name.clone().unwrap_or_default(),
                changed,
            );
            drive(stream, "services", services, tx).await;
        }));
        // Headless estimator Services resolve through their EndpointSlices: follow those too,
        // so hand-made endpoints that move are followed like an ExternalName that changes.
        // Without `watch` on endpointslices (an older RBAC) the watch only logs and retries.
        let ns = namespace.to_string();
        let prefix = format!("{prefix}-");
        let api: Api<EndpointSlice> = Api::namespaced(client, &ns);
        let (tx, _rx) = tokio_watch::channel(false);
        let est = self.clone();
        tasks.push(tokio::spawn(async move {
            let cfg = list_config().labels(SERVICE_NAME_LABEL);
            let stream = watcher::watcher(api, cfg).backoff(WatchBackoff::default());
            // Added, changed or gone: the same re-resolution of the slice's Service.
            let changed = move |key: &String| {
                if let Some(svc) = slice_service(key, &prefix) {
                    est.service_changed(ns.clone(), svc.to_string());
                }
            };
            let slices = OnChange::new(slice_key, changed);
            drive(stream, "endpointslices", slices, tx).await;
        }));
        tasks
    }

    /// An estimator Service changed: re-resolve and reconnect. When the new address does not
    /// answer yet (an estimator being moved), keep retrying with backoff until it does or the
    /// Service changes again; the old connection stays in use meanwhile.
    pub fn service_changed(self: &Arc<Self>, namespace: String, name: String) {
        let seq = self.next_change.fetch_add(1, Ordering::Relaxed) + 1;
        self.service_seq
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone(), seq);
        let this = self.clone();
        tokio::spawn(async move {
            let mut delay = Duration::from_millis(500);
            loop {
                match this.cache.on_service_changed(&namespace, &name).await {
                    Ok(_) => break,
                    Err(err) => {
                        tracing::debug!(service = %name, "estimator Service changed but reconnecting failed (retry in {delay:?}): {err}")
                    }
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(60));
                if !this.is_latest_change(&name, seq) {
                    return;
                }
            }
            // Followed: forget the Service unless a later change is being followed.
            let mut m = this.service_seq.lock().unwrap_or_else(|p| p.into_inner());
            if m.get(&name) == Some(&seq) {
                m.remove(&name);
            }
        });
    }

    fn is_latest_change(&self, name: &str, seq: u64) -> bool {
        self.service_seq
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            == Some(&seq)
    }

    /// Services whose latest change is still being followed, and clusters whose connection
    /// is being retried (tests).
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let services = self.service_seq.lock().unwrap_or_else(|p| p.into_inner());
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        (services.len(), failures.len())
    }

    /// Connect (or keep) the cluster's estimator; retry failures with backoff while the
    /// cluster exists (the reference's `scheduler-estimator` worker). Call it on the cluster's
    /// add or update event: the cluster exists, even if it was deleted before.
    pub fn ensure(self: &Arc<Self>, cluster: Arc<Cluster>, current: ClusterLookup) {
        self.cache.forget_deletion(cluster.name());
        self.attempt(cluster, current);
    }

    /// One connection attempt on its own task, and its retries. An attempt that runs after
    /// the cluster's deletion (an add event's attempt overtaken by the delete event) makes
    /// nothing, so that nothing stays behind for a cluster that is gone.
    fn attempt(self: &Arc<Self>, cluster: Arc<Cluster>, current: ClusterLookup) {
        let this = self.clone();
        let added = self.worker.added();
        tokio::spawn(async move {
            let name = cluster.name().to_string();
            let token = this.worker.started(Some(added));
            let result = this.cache.ensure_existing(&cluster).await;
            this.worker.finished(token);
            match result {
                Ok(()) => this.forget_failures(&name),
                Err(EstablishError::Deleted(_)) => this.forget_failures(&name),
                Err(e) => {
                    this.worker.retried();
                    let n = {
                        let mut f = this.failures.lock().unwrap_or_else(|p| p.into_inner());
                        let n = f.entry(name.clone()).or_insert(0);
                        *n += 1;
                        *n
                    };
                    let delay = Duration::from_millis(5)
                        .saturating_mul(1 << n.min(16))
                        .min(Duration::from_secs(300));
                    tracing::debug!(cluster = %name, "estimator connection failed (retry in {delay:?}): {e}");
                    tokio::time::sleep(delay).await;
                    match current(&name) {
                        Some(c) => this.attempt(c, current),
                        None => this.forget_failures(&name),
                    }
                }
            }
        });
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

    /// A cache whose every cluster has an estimator Service that cannot be resolved (no
    /// port), so connecting fails at once, without the network.
    fn failing_sync(clusters: usize) -> Arc<EstimatorSync> {
        let services = (0..clusters).map(|i| {
            serde_json::from_value::<Service>(json!({
                "metadata": {"name": format!("karmada-scheduler-estimator-m{i}"), "namespace": "karmada-system"},
                "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.1"}
            }))
            .unwrap()
        });
        let source = Arc::new(crate::InMemoryServiceSource::with_objects(services, []));
        let cache = Arc::new(ConnectionCache::new(Default::default(), source));
        let metrics = component_base::metrics::ComponentMetrics::new();
        EstimatorSync::new(cache, metrics.workqueue("scheduler-estimator"))
    }

    /// Clusters as the daemon's cache holds them, for the sync's lookups.
    #[derive(Clone, Default)]
    struct Live(Arc<Mutex<HashMap<String, Arc<Cluster>>>>);

    impl Live {
        fn lookup(&self) -> ClusterLookup {
            let live = self.0.clone();
            Arc::new(move |name: &str| live.lock().unwrap().get(name).cloned())
        }
    }

    /// Clusters added and deleted, their connections failing, leave no entry, failure count
    /// or dial lock, also when the deletion comes before the connection attempt started (a
    /// spawned attempt that ran after the deletion used to make the entry again, for good).
    #[tokio::test(start_paused = true)]
    async fn deleted_clusters_leave_no_connection_state() {
        let n = 2_000;
        let sync = failing_sync(n);
        let live = Live::default();
        for i in 0..n {
            let name = format!("m{i}");
            let cluster = Arc::new(Cluster::new(&name, Default::default()));
            live.0.lock().unwrap().insert(name.clone(), cluster.clone());
            sync.ensure(cluster, live.lookup());
            if i % 2 == 0 {
                // Deleted before its attempt ran.
                live.0.lock().unwrap().remove(&name);
                sync.cluster_deleted(&name);
            }
        }
        // Every attempt ran and failed; the survivors are retrying.
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(sync.cache.held().0, n / 2);
        assert_eq!(sync.held().1, n / 2);
        // Now the others go too, while their retries wait.
        for i in (1..n).step_by(2) {
            let name = format!("m{i}");
            live.0.lock().unwrap().remove(&name);
            sync.cluster_deleted(&name);
        }
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(sync.cache.held(), (0, 0));
        assert_eq!(sync.held(), (0, 0));
        assert!(sync.cache.clusters().is_empty());
    }

    /// Service changes are remembered only while they are being followed: many Services
    /// that come and go (estimator ones or not) leave nothing behind.
    #[tokio::test(start_paused = true)]
    async fn services_that_come_and_go_leave_nothing() {
        let sync = failing_sync(0);
        for i in 0..10_000 {
            sync.service_changed("karmada-system".into(), format!("svc-{i}"));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(sync.held(), (0, 0));
    }

    /// A retry of an older change of a Service stops when a newer change comes, and the
    /// newer one is still followed after the older one ended.
    #[tokio::test(start_paused = true)]
    async fn a_newer_change_replaces_the_retries_of_an_older_one() {
        let sync = failing_sync(1);
        let cluster = Arc::new(Cluster::new("m0", Default::default()));
        let live = Live::default();
        live.0.lock().unwrap().insert("m0".into(), cluster.clone());
        sync.ensure(cluster, live.lookup());
        tokio::time::sleep(Duration::from_millis(1)).await;
        let service = "karmada-scheduler-estimator-m0".to_string();
        sync.service_changed("karmada-system".into(), service.clone());
        tokio::time::sleep(Duration::from_millis(1)).await;
        let first = sync.service_seq.lock().unwrap().get(&service).copied();
        assert!(first.is_some(), "its reconnection fails and is retried");
        sync.service_changed("karmada-system".into(), service.clone());
        let second = sync.service_seq.lock().unwrap().get(&service).copied();
        assert!(second > first);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(
            sync.service_seq.lock().unwrap().get(&service).copied(),
            second,
            "the newer change is still followed"
        );
        live.0.lock().unwrap().remove("m0");
        sync.cluster_deleted("m0");
        // Its cluster is gone: the next retry finds nothing to reconnect, and stops.
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert_eq!(sync.held(), (0, 0));
    }
}
