//! Keeping the connections current: the Cluster events a daemon sees, and watches of the
//! estimator Services and their EndpointSlices, turned into [`ConnectionCache`] calls with
//! retries. Shared by karmada-scheduler and karmada-descheduler.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use component_base::metrics::WorkqueueMetrics;
use component_base::watch::{WatchBackoff, drive};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::Cluster;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use tokio::sync::watch as tokio_watch;

use crate::cache::ConnectionCache;

/// The current Cluster object of a name, if it still exists (a failed connection is retried
/// only while its cluster does).
pub type ClusterLookup = Arc<dyn Fn(&str) -> Option<Arc<Cluster>> + Send + Sync>;

/// The estimator connections, driven by Cluster and Service events.
pub struct EstimatorSync {
    cache: Arc<ConnectionCache>,
    failures: Mutex<HashMap<String, u32>>,
    /// Per Service name, how many changes were seen; a retry of an older change stops.
    service_seq: Mutex<HashMap<String, u64>>,
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
        let (e1, e2) = (self.clone(), self.clone());
        tasks.push(tokio::spawn(async move {
            let stream =
                watcher::watcher(api, watcher::Config::default()).backoff(WatchBackoff::default());
            let ns1 = ns.clone();
            let ns2 = ns.clone();
            drive(
                stream,
                "services",
                |s: &Service| s.metadata.name.clone().unwrap_or_default(),
                move |s: Service| {
                    e1.service_changed(ns1.clone(), s.metadata.name.clone().unwrap_or_default())
                },
                move |name: &str| e2.service_changed(ns2.clone(), name.to_string()),
                tx,
            )
            .await;
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
            let cfg = watcher::Config::default().labels(SERVICE_NAME_LABEL);
            let stream = watcher::watcher(api, cfg).backoff(WatchBackoff::default());
            // Added, changed or gone: the same re-resolution of the slice's Service.
            let changed = move |key: &str| {
                if let Some(svc) = slice_service(key, &prefix) {
                    est.service_changed(ns.clone(), svc.to_string());
                }
            };
            let removed = changed.clone();
            drive(
                stream,
                "endpointslices",
                slice_key,
                move |s: EndpointSlice| changed(&slice_key(&s)),
                removed,
                tx,
            )
            .await;
        }));
        tasks
    }

    /// An estimator Service changed: re-resolve and reconnect. When the new address does not
    /// answer yet (an estimator being moved), keep retrying with backoff until it does or the
    /// Service changes again; the old connection stays in use meanwhile.
    pub fn service_changed(self: &Arc<Self>, namespace: String, name: String) {
        let seq = {
            let mut m = self.service_seq.lock().unwrap_or_else(|p| p.into_inner());
            let n = m.entry(name.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let this = self.clone();
        tokio::spawn(async move {
            let mut delay = Duration::from_millis(500);
            loop {
                match this.cache.on_service_changed(&namespace, &name).await {
                    Ok(_) => return,
                    Err(err) => {
                        tracing::debug!(service = %name, "estimator Service changed but reconnecting failed (retry in {delay:?}): {err}")
                    }
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(60));
                let current = this
                    .service_seq
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&name)
                    .copied();
                if current != Some(seq) {
                    return;
                }
            }
        });
    }

    /// Connect (or keep) the cluster's estimator; retry failures with backoff while the
    /// cluster exists (the reference's `scheduler-estimator` worker).
    pub fn ensure(self: &Arc<Self>, cluster: Arc<Cluster>, current: ClusterLookup) {
        let this = self.clone();
        let added = self.worker.added();
        tokio::spawn(async move {
            let name = cluster.name().to_string();
            let token = this.worker.started(Some(added));
            let result = this.cache.ensure(&cluster).await;
            this.worker.finished(token);
            match result {
                Ok(()) => {
                    this.failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&name);
                }
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
                    if let Some(c) = current(&name) {
                        this.ensure(c, current);
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
}
