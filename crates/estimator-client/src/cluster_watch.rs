//! The Cluster watch of a daemon that keeps estimator connections: each Cluster decoded (one
//! that does not decode is logged and skipped), the estimator sync told first, then the
//! daemon's own cache; a deletion the other way round. Shared by karmada-scheduler and
//! karmada-descheduler, so that both follow clusters the same way.

use std::sync::Arc;

use component_base::key::ObjectKey;
use component_base::store::Reflect;
use component_base::watch::{RawObject, watch_all};
use karmada_api::Cluster;
use kube::Resource as _;
use kube::api::ApiResource;
use tokio::task::JoinHandle;

use crate::sync::{ClusterLookup, EstimatorSync};

/// Watch Clusters into `cache`, with `estimators` in front (see the module; `current` reads
/// the daemon's cache, for retries). The task runs until aborted; the cache is told when
/// the first list is through.
pub fn watch_clusters<C>(
    client: kube::Client,
    estimators: Option<Arc<EstimatorSync>>,
    current: ClusterLookup,
    cache: C,
) -> JoinHandle<()>
where
    C: Reflect<Cluster> + Send + 'static,
{
    let watch = Clusters(cache, estimators, current);
    watch_all(client, &ApiResource::erase::<Cluster>(&()), watch)
}

/// A daemon's Cluster cache with the estimator sync (and its lookup) in front.
struct Clusters<C>(C, Option<Arc<EstimatorSync>>, ClusterLookup);

impl<C: Reflect<Cluster>> Reflect<RawObject> for Clusters<C> {
    fn upsert(&mut self, raw: RawObject) {
        match karmada_api::from_json_str::<Cluster>(raw.json()) {
            Ok(c) => {
                if let Some(e) = &self.1 {
                    e.ensure(&c, &self.2);
                }
                self.0.upsert(c);
            }
            Err(e) => tracing::error!(
                "skipping Cluster {:?} that does not decode: {}",
                raw.meta().name.as_deref().unwrap_or_default(),
                karmada_api::excerpt(&e.to_string(), 512)
            ),
        }
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.delete(key);
        if let Some(e) = &self.1 {
            e.cluster_deleted(&key.name);
        }
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.held()
    }

    fn synced(&mut self) {
        self.0.synced();
    }
}
