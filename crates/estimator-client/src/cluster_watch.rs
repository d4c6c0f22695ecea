//! The Cluster watch of a daemon that keeps estimator connections: each Cluster decoded (one
//! that does not decode is logged and skipped), the estimator sync told first, then the
//! daemon's own cache; a deletion the other way round. Shared by karmada-scheduler and
//! karmada-descheduler, so that both follow clusters the same way.

use std::sync::Arc;

use component_base::key::ObjectKey;
use component_base::watch::{RawObject, watch_all};
use karmada_api::Cluster;
use kube::Resource as _;
use kube::api::ApiResource;
use tokio::sync::watch as tokio_watch;
use tokio::task::JoinHandle;

use crate::sync::{ClusterLookup, EstimatorSync};

/// Watch Clusters: `upsert` gets every Cluster added or changed (without its managed fields),
/// `remove` the name of every Cluster deleted. With `estimators`, each added or changed
/// Cluster's connection is ensured before `upsert` (`current` reads the daemon's cache, for
/// retries) and each deleted one's dropped after `remove`. The task runs until aborted; the
/// receiver turns true once the first list is through.
pub fn watch_clusters(
    client: kube::Client,
    estimators: Option<Arc<EstimatorSync>>,
    current: ClusterLookup,
    upsert: impl Fn(Cluster) + Send + 'static,
    remove: impl Fn(&str) + Send + 'static,
) -> (JoinHandle<()>, tokio_watch::Receiver<bool>) {
    let on_delete = estimators.clone();
    watch_all(
        client,
        &ApiResource::erase::<Cluster>(&()),
        "clusters",
        move |raw: RawObject| match karmada_api::from_json_str::<Cluster>(raw.json()) {
            Ok(c) => {
                if let Some(e) = &estimators {
                    e.ensure(Arc::new(c.clone()), current.clone());
                }
                upsert(c);
            }
            Err(e) => tracing::error!(
                "skipping Cluster {:?} that does not decode: {}",
                raw.meta().name.as_deref().unwrap_or_default(),
                karmada_api::excerpt(&e.to_string(), 512)
            ),
        },
        move |k: &ObjectKey| {
            let name = k.name.as_str();
            remove(name);
            if let Some(e) = &on_delete {
                e.cluster_deleted(name);
            }
        },
    )
}
