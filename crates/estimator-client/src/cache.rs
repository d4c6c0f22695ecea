//! One estimator connection per cluster, kept in step with Clusters and Services.
//!
//! Like the reference: a connection is made when a cluster is added (or first used), kept
//! while the cluster exists and closed when it is deleted; Pull clusters get none when
//! `--disable-scheduler-estimator-in-pull-mode` is set. Unlike the reference, a change of
//! the estimator Service re-resolves it and, when the addresses differ, swaps in a new
//! connection ([`ConnectionCache::on_service_changed`]), so that moving an LVS VIP or a port
//! is followed without a restart.
//!
//! Logging is per state change of a cluster's estimator (connected, unreachable, failing,
//! answering again), never per call, so an absent estimator does not flood the log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use component_base::lru::Lru;
use karmada_api::Cluster;
use prometheus_client::registry::Registry;
use tokio::time::Instant;

use crate::dial::{self, Connection, DialError, DialSettings};
use crate::metrics::EstimatorMetrics;
use crate::options::EstimatorOptions;
use crate::resolver::{self, Resolution, ResolveError};
use crate::source::{LookupError, ServiceSource};
use crate::tls::{self, TlsError};

/// `spec.syncMode` of Pull clusters.
pub const PULL: &str = "Pull";

/// A connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EstablishError {
    /// The Service lookup failed (not NotFound).
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The Service is malformed.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// TLS files could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// No address connected.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// A dial failed less than `redial_backoff` ago: a call does not dial again, nor does a
    /// Service change that leaves the addresses as they were, before `retry_in` has passed.
    #[error(
        "the estimator of cluster {cluster} failed to connect recently; not dialling it again for {retry_in:?}"
    )]
    BackingOff {
        /// The cluster.
        cluster: String,
        /// How long the backoff still lasts.
        retry_in: Duration,
    },
    /// The cluster was deleted while dialling.
    #[error("cluster {0} was deleted before or while its estimator was being dialled")]
    Deleted(String),
}

/// Why a connection is being established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Cluster event (merged and backed off per cluster by the caller): connect unless
    /// connected.
    Ensure,
    /// A call needs it: connect unless connected or a dial failed recently.
    OnUse,
    /// Service event: resolve again, reconnect if the addresses changed (addresses other than
    /// those that failed last are dialled at once, backoff or not).
    Refresh,
}

/// What a cluster's estimator last did, for change-only logging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Health {
    #[default]
    Unknown,
    Ready,
    Unreachable,
    Failing,
}

#[derive(Default)]
struct Entry {
    pull: bool,
    connection: Option<Arc<Connection>>,
    resolution: Option<Resolution>,
    last_dial_failure: Option<Instant>,
    /// What the last failed dial resolved to: a Service change to other addresses is dialled
    /// within the backoff, one that leaves them as they were is not.
    failed: Option<Resolution>,
    health: Health,
    /// What the last warning about a failed connection was about (the Service's addresses,
    /// or its error): a failure of something else is warned about again even while the
    /// estimator stays unreachable, so that a Service arriving or changing after the first
    /// failure gets its own warning.
    warned: Option<String>,
    /// The notes of the last resolution logged (see [`Resolution::notes`]).
    noted: Vec<String>,
}

/// The connection cache. Share it in an `Arc`; every method takes `&self`.
pub struct ConnectionCache {
    options: Arc<EstimatorOptions>,
    source: Arc<dyn ServiceSource>,
    metrics: EstimatorMetrics,
    entries: RwLock<HashMap<String, Entry>>,
    dial_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Clusters deleted and not added again, the most recent [`DELETED_REMEMBERED`]: a call
    /// still running with a snapshot from before the deletion must not bring the cluster
    /// back (an entry, a dial, metric series) for good.
    deleted: Mutex<Lru<String, ()>>,
}

/// Deleted clusters remembered against calls from older snapshots. A call finishes within
/// the estimator timeout, long before this many more clusters can be deleted.
pub const DELETED_REMEMBERED: usize = 4096;

fn cluster_name(cluster: &Cluster) -> &str {
    cluster.metadata.name.as_deref().unwrap_or_default()
}

fn is_pull(cluster: &Cluster) -> bool {
    cluster.spec.sync_mode == PULL
}

impl ConnectionCache {
    /// An empty cache resolving Services through `source`.
    pub fn new(options: EstimatorOptions, source: Arc<dyn ServiceSource>) -> Self {
        Self {
            options: Arc::new(options),
            source,
            metrics: EstimatorMetrics::default(),
            entries: RwLock::new(HashMap::new()),
            dial_locks: Mutex::new(HashMap::new()),
            deleted: Mutex::new(Lru::new(DELETED_REMEMBERED)),
        }
    }

    /// A cache over the API server's Services (and EndpointSlices with
    /// `endpoint_routing`): the one the daemons and `explain` use.
    pub fn over_api(options: EstimatorOptions, client: kube::Client) -> Self {
        let source = crate::source::KubeServiceSource::new(client)
            .with_endpoint_routing(options.endpoint_routing);
        Self::new(options, Arc::new(source))
    }

    /// The options the cache was built with.
    pub fn options(&self) -> &EstimatorOptions {
        &self.options
    }

    /// The metric families (shared with the fan-out).
    pub fn metrics(&self) -> &EstimatorMetrics {
        &self.metrics
    }

    /// Adds the estimator client's metric families to `registry`.
    pub fn register_metrics(&self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    /// Cluster added or updated: connect if there is no connection yet (backing off and
    /// merging events is the caller's business: [`crate::sync::EstimatorSync`]). Pull
    /// clusters are skipped when the pull-mode flag is set, keeping any connection they
    /// already have.
    pub async fn ensure(&self, cluster: &Cluster) -> Result<(), EstablishError> {
        self.forget_deletion(cluster_name(cluster));
        self.ensure_existing(cluster_name(cluster), is_pull(cluster))
            .await
    }

    /// The cluster exists (again): calls may connect to it.
    pub(crate) fn forget_deletion(&self, name: &str) {
        self.deleted_lock().remove(&name.to_string());
    }

    /// [`ensure`](Self::ensure), unless the cluster was deleted since its last add or update
    /// event ([`EstablishError::Deleted`]): an attempt overtaken by the deletion makes
    /// nothing.
    pub(crate) async fn ensure_existing(
        &self,
        name: &str,
        pull: bool,
    ) -> Result<(), EstablishError> {
        if !self.register(name, pull) {
            return Err(EstablishError::Deleted(name.to_string()));
        }
        if self.pull_disabled(name) {
            return Ok(());
        }
        self.establish(name, Mode::Ensure).await.map(|_| ())
    }

    /// [`ensure`](Self::ensure) for many clusters at once (start-up, one-shot tools): one line
    /// per cluster whose estimator cannot be used, naming its Service.
    pub async fn ensure_all(&self, clusters: &[Cluster]) -> Vec<String> {
        let all = clusters.iter().map(|c| self.ensure(c));
        let outcomes = futures::future::join_all(all).await;
        let o = &self.options;
        let unusable = |(cluster, outcome): (&Cluster, Result<(), EstablishError>)| {
            let name = cluster_name(cluster);
            match outcome {
                Err(e) => Some(format!(
                    "scheduler-estimator of cluster {name}: Service {}/{} port {}: {e}",
                    o.service_namespace,
                    o.service_name(name),
                    o.port
                )),
                Ok(()) if self.connection(name).is_none() => Some(format!(
                    "scheduler-estimator of cluster {name}: not connected (Pull cluster with --disable-scheduler-estimator-in-pull-mode)"
                )),
                Ok(()) => None,
            }
        };
        clusters.iter().zip(outcomes).filter_map(unusable).collect()
    }

    /// Cluster deleted: close and forget its connection and metric series.
    pub fn on_cluster_deleted(&self, name: &str) {
        let removed = {
            // Under the entries' lock, as `register` checks it.
            let mut entries = self.write();
            self.deleted_lock().insert(name.to_string(), ());
            entries.remove(name)
        };
        self.dial_locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        self.metrics.forget_cluster(name);
        if let Some(entry) = removed
            && let Some(connection) = entry.connection
        {
            tracing::info!(
                cluster = name,
                target = connection.target(),
                "Closed the connection to the estimator of a deleted cluster"
            );
        }
    }

    /// Service `namespace/name` added, changed or deleted. If it is the estimator Service of
    /// a known cluster, re-resolve it and reconnect when the addresses changed (the old
    /// connection is kept if the new one cannot be made). Returns whether the connection was
    /// replaced or newly made.
    pub async fn on_service_changed(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<bool, EstablishError> {
        let Some(cluster) = self.options.cluster_of_service(namespace, name) else {
            return Ok(false);
        };
        if !self.read().contains_key(cluster) || self.pull_disabled(cluster) {
            return Ok(false);
        }
        let before = self.connection(cluster);
        let after = self.establish(cluster, Mode::Refresh).await?;
        Ok(before.is_none_or(|b| !Arc::ptr_eq(&b, &after)))
    }

    /// EndpointSlice added, changed or deleted: re-resolves its Service (headless Services
    /// are resolved through their slices), see [`on_service_changed`](Self::on_service_changed).
    pub async fn on_endpoint_slice_changed(
        &self,
        slice: &k8s_openapi::api::discovery::v1::EndpointSlice,
    ) -> Result<bool, EstablishError> {
        let namespace = slice.metadata.namespace.as_deref().unwrap_or_default();
        let labels = slice.metadata.labels.as_ref();
        match labels.and_then(|l| l.get(resolver::SERVICE_NAME_LABEL)) {
            Some(service) => self.on_service_changed(namespace, service).await,
            None => Ok(false),
        }
    }

    /// The cached connection of a cluster, if any.
    pub fn connection(&self, cluster: &str) -> Option<Arc<Connection>> {
        self.read().get(cluster).and_then(|e| e.connection.clone())
    }

    /// Names of the clusters the cache knows (connected or not), sorted.
    pub fn clusters(&self) -> Vec<String> {
        let mut names: Vec<String> = self.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// The connection for a call: the cached one, else (first use) a dial, unless the cluster
    /// is a Pull cluster under the pull-mode flag or a dial failed less than
    /// `redial_backoff` ago.
    pub(crate) async fn connection_for_call(
        self: &Arc<Self>,
        cluster: &str,
        pull: Option<bool>,
    ) -> Option<Arc<Connection>> {
        if let Some(connection) = self.connection(cluster) {
            return Some(connection);
        }
        let pull = pull.unwrap_or_else(|| self.read().get(cluster).is_some_and(|e| e.pull));
        if !self.register(cluster, pull) {
            return None;
        }
        if self.pull_disabled(cluster) || self.backing_off(cluster) {
            return None;
        }
        // The dial runs on its own task: when the fan-out's deadline stops waiting for it, it
        // still finishes and records its outcome, so the next fan-out either finds the
        // connection or backs off instead of paying for the same dial again.
        let this = self.clone();
        let name = cluster.to_string();
        let dial = tokio::spawn(async move { this.establish(&name, Mode::OnUse).await });
        dial.await.ok()?.ok()
    }

    fn backing_off(&self, cluster: &str) -> bool {
        self.backoff_left(cluster).is_some()
    }

    /// How long the backoff after the cluster's last failed dial still lasts, if it does.
    fn backoff_left(&self, cluster: &str) -> Option<Duration> {
        let failed = self.read().get(cluster)?.last_dial_failure?;
        self.options
            .redial_backoff
            .checked_sub(failed.elapsed())
            .filter(|left| !left.is_zero())
    }

    fn backing_off_error(&self, cluster: &str, retry_in: Duration) -> EstablishError {
        EstablishError::BackingOff {
            cluster: cluster.to_string(),
            retry_in,
        }
    }

    /// Records the outcome of a call, logging only changes.
    pub(crate) fn record_call(&self, cluster: &str, outcome: Result<(), &str>) {
        // Almost every call answers a healthy cluster: that needs no change, and the read
        // lock lets a cycle's hundreds of concurrent calls record it without queueing for
        // the write lock.
        if outcome.is_ok()
            && self
                .read()
                .get(cluster)
                .is_none_or(|e| e.health == Health::Ready)
        {
            return;
        }
        let mut entries = self.write();
        let Some(entry) = entries.get_mut(cluster) else {
            return;
        };
        match outcome {
            Ok(()) => {
                if matches!(entry.health, Health::Failing | Health::Unreachable) {
                    tracing::info!(cluster, "Estimator answers again");
                }
                entry.health = Health::Ready;
            }
            Err(reason) => {
                if entry.health != Health::Failing {
                    tracing::warn!(cluster, error = reason, "Estimator calls are failing");
                }
                entry.health = Health::Failing;
            }
        }
    }

    /// Records one call's outcome in the metrics, unless the cluster was deleted meanwhile
    /// (its series are gone and stay gone). Under the entries' read lock, so that a deletion
    /// cannot fall between the check and the observation.
    pub(crate) fn observe_call(
        &self,
        cluster: &str,
        method: &'static str,
        result: crate::metrics::CallResult,
        took: std::time::Duration,
    ) {
        let entries = self.read();
        if entries.contains_key(cluster) {
            self.metrics.observe_call(cluster, method, result, took);
        }
    }

    fn deleted_lock(&self) -> std::sync::MutexGuard<'_, Lru<String, ()>> {
        self.deleted.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Clusters with an entry, and with a dial lock (tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, usize) {
        let locks = self.dial_locks.lock().unwrap_or_else(|e| e.into_inner());
        (self.read().len(), locks.len())
    }

    /// Know `cluster` (a Pull cluster or not), unless it was deleted since its last add or
    /// update event; whether it is known. The check and the entry are made under the
    /// entries' lock, which a deletion also takes, so that no entry outlives a deletion.
    fn register(&self, cluster: &str, pull: bool) -> bool {
        let mut entries = self.write();
        if self.deleted_lock().peek(&cluster.to_string()).is_some() {
            return false;
        }
        entries.entry(cluster.to_string()).or_default().pull = pull;
        true
    }

    fn pull_disabled(&self, cluster: &str) -> bool {
        self.options.disable_in_pull_mode && self.read().get(cluster).is_some_and(|e| e.pull)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Entry>> {
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.entries.write().unwrap_or_else(|e| e.into_inner())
    }

    fn dial_lock(&self, cluster: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.dial_locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(cluster.to_string()).or_default().clone()
    }

    /// Resolves and dials `cluster`, one dial per cluster at a time. `Ensure` and `OnUse`
    /// return an existing connection as is (`OnUse` also gives up while backing off after a
    /// failed dial); `Refresh` resolves the Service again and replaces the connection only
    /// when the addresses changed, and gives up while backing off when they are those that
    /// failed.
    async fn establish(
        &self,
        cluster: &str,
        mode: Mode,
    ) -> Result<Arc<Connection>, EstablishError> {
        let lock = self.dial_lock(cluster);
        let _guard = lock.lock().await;
        let existing = self.connection(cluster);
        if let (Mode::Ensure | Mode::OnUse, Some(connection)) = (mode, &existing) {
            return Ok(connection.clone());
        }
        if mode == Mode::OnUse
            && let Some(left) = self.backoff_left(cluster)
        {
            return Err(self.backing_off_error(cluster, left));
        }
        let result = self.resolve_and_dial(cluster, existing, mode).await;
        let mut entries = self.write();
        let Some(entry) = entries.get_mut(cluster) else {
            // Deleted meanwhile: the lock taken above may have been made after the deletion
            // dropped the cluster's, so drop it too unless another dial made a newer one.
            let mut locks = self.dial_locks.lock().unwrap_or_else(|e| e.into_inner());
            if locks.get(cluster).is_some_and(|l| Arc::ptr_eq(l, &lock)) {
                locks.remove(cluster);
            }
            return Err(EstablishError::Deleted(cluster.to_string()));
        };
        // Not dialled: nothing to record.
        let result = match result {
            Err((e @ EstablishError::BackingOff { .. }, _)) => return Err(e),
            r => r,
        };
        let (result, attempted) = match result {
            Ok((connection, resolution, fresh)) => (Ok((connection, fresh)), Some(resolution)),
            Err((error, resolution)) => (Err(error), resolution),
        };
        if let Some(resolution) = &attempted
            && entry.noted != resolution.notes
        {
            if !resolution.notes.is_empty() {
                tracing::warn!(
                    cluster,
                    service = self.service_key(cluster),
                    notes = resolution.notes.join("; "),
                    "Parts of the estimator Service are not used"
                );
            }
            entry.noted = resolution.notes.clone();
        }
        match result {
            Ok((connection, fresh)) => {
                let resolution = attempted.expect("a connection comes from a resolution");
                if fresh {
                    self.metrics.observe_dial(cluster, true);
                    tracing::info!(
                        cluster,
                        target = connection.target(),
                        origin = %resolution.origin,
                        "Connection with the estimator has been established"
                    );
                    entry.health = Health::Ready;
                }
                entry.connection = Some(connection.clone());
                entry.resolution = Some(resolution);
                entry.last_dial_failure = None;
                entry.failed = None;
                entry.warned = None;
                self.metrics.set_connected(cluster, true);
                Ok(connection)
            }
            Err(error) => {
                self.note_failed_dial(cluster, entry, attempted, &error);
                Err(error)
            }
        }
    }

    /// Records a failed dial of `cluster` (of `attempted`, when the Service resolved): the
    /// metrics, the backoff, and a warning once per state change, again when what failed is
    /// something else (the Service arrived, its address changed), never per retry.
    fn note_failed_dial(
        &self,
        cluster: &str,
        entry: &mut Entry,
        attempted: Option<Resolution>,
        error: &EstablishError,
    ) {
        self.metrics.observe_dial(cluster, false);
        self.metrics
            .set_connected(cluster, entry.connection.is_some());
        entry.last_dial_failure = Some(Instant::now());
        let about = match (&attempted, error) {
            (Some(r), _) => format!("{} {}", r.origin, r.targets()),
            (None, EstablishError::Lookup(_)) => "lookup".to_string(),
            (None, e) => e.to_string(),
        };
        if entry.health != Health::Unreachable || entry.warned.as_ref() != Some(&about) {
            let service = self.service_key(cluster);
            match &attempted {
                Some(r) => tracing::warn!(
                    cluster,
                    service,
                    origin = %r.origin,
                    addresses = r.targets(),
                    error = %error,
                    "Failed to connect to the estimator"
                ),
                None => tracing::warn!(
                    cluster,
                    service,
                    error = %error,
                    "Failed to connect to the estimator"
                ),
            }
            entry.warned = Some(about);
        }
        entry.health = Health::Unreachable;
        entry.failed = attempted;
    }

    /// `namespace/name` of the cluster's estimator Service, for logs.
    fn service_key(&self, cluster: &str) -> String {
        format!(
            "{}/{}",
            self.options.service_namespace,
            self.options.service_name(cluster)
        )
    }

    /// Returns the connection, its resolution and whether it is new; a failure carries the
    /// resolution that was dialled, if the Service resolved.
    async fn resolve_and_dial(
        &self,
        cluster: &str,
        existing: Option<Arc<Connection>>,
        mode: Mode,
    ) -> Result<(Arc<Connection>, Resolution, bool), (EstablishError, Option<Resolution>)> {
        let options = &self.options;
        let namespace = options.service_namespace.as_str();
        let service = options.service_name(cluster);
        let lookup = self
            .source
            .lookup(namespace, &service)
            .await
            .map_err(|e| (e.into(), None))?;
        let mut resolution = resolver::resolve(
            namespace,
            &service,
            options.port,
            lookup.service.as_ref(),
            &lookup.endpoint_slices,
            options.endpoint_routing,
        )
        .map_err(|e| (e.into(), None))?;
        if !options.tls_server_name_annotation
            && let Some(name) = resolution.server_name.take()
        {
            resolution.notes.push(format!(
                "annotation {} {name:?} ignored (--scheduler-estimator-tls-name-annotation is off)",
                resolver::TLS_SERVER_NAME_ANNOTATION
            ));
        }
        if let Some(connection) = existing {
            let unchanged =
                self.read().get(cluster).and_then(|e| e.resolution.as_ref()) == Some(&resolution);
            if unchanged {
                return Ok((connection, resolution, false));
            }
        }
        if mode == Mode::Refresh
            && let Some(left) = self.backoff_left(cluster)
            && self.read().get(cluster).and_then(|e| e.failed.as_ref()) == Some(&resolution)
        {
            return Err((self.backing_off_error(cluster, left), Some(resolution)));
        }
        let tls = match tls::client_config(options) {
            Ok(tls) => tls,
            Err(e) => return Err((e.into(), Some(resolution))),
        };
        let settings = DialSettings {
            tls,
            server_name: resolution
                .server_name
                .clone()
                .or_else(|| options.server_name.clone()),
            connect_timeout: options.connect_timeout,
        };
        tracing::debug!(cluster, addresses = ?resolution.addresses, "Dialling the estimator");
        match dial::dial(&resolution, &settings).await {
            Ok(connection) => Ok((Arc::new(connection), resolution, true)),
            Err(e) => Err((e.into(), Some(resolution))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::CallResult;
    use k8s_openapi::api::core::v1::Service;

    /// Every cluster's estimator Service has no port: connecting fails at once, offline.
    fn failing_cache(clusters: usize) -> Arc<ConnectionCache> {
        let services = (0..clusters).map(|i| {
            serde_json::from_value::<Service>(serde_json::json!({
                "metadata": {"name": format!("karmada-scheduler-estimator-m{i}"), "namespace": "karmada-system"},
                "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.1"}
            }))
            .unwrap()
        });
        let source = Arc::new(crate::InMemoryServiceSource::with_objects(services, []));
        Arc::new(ConnectionCache::new(EstimatorOptions::default(), source))
    }

    /// Calls still running with a snapshot from before a cluster's deletion find no
    /// connection and bring back neither an entry, a dial lock nor a metric series; the
    /// cluster added again is connected as any other.
    #[tokio::test]
    async fn calls_after_a_deletion_do_not_bring_the_cluster_back() {
        let n = 10_000;
        let cache = failing_cache(n);
        let mut registry = Registry::default();
        cache.register_metrics(&mut registry);
        for i in 0..n {
            let name = format!("m{i}");
            let cluster = Cluster::new(&name, Default::default());
            assert!(cache.ensure(&cluster).await.is_err());
            cache.on_cluster_deleted(&name);
            assert!(
                cache
                    .connection_for_call(&name, Some(false))
                    .await
                    .is_none()
            );
            cache.observe_call(
                &name,
                "MaxAvailableReplicas",
                CallResult::NoConnection,
                Default::default(),
            );
            cache.record_call(&name, Err("late"));
        }
        assert_eq!(cache.held(), (0, 0));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(!text.contains("cluster=\""), "{text}");
        assert!(cache.deleted_lock().len() <= DELETED_REMEMBERED);
        // Added again: known again, and calls may dial it.
        let again = Cluster::new("m1", Default::default());
        assert!(cache.ensure(&again).await.is_err());
        assert_eq!(cache.clusters(), ["m1"]);
        assert!(cache.deleted_lock().peek(&"m1".to_string()).is_none());
    }
}
