//! The watches, each event handed to its hook (`handler.rs`), and each first complete list to
//! its cache's writer (the store is ready once all three are in, before the first cycle).
//! Watched: ResourceBindings, ClusterResourceBindings and Clusters and, with estimators, the
//! estimator Services.

use std::sync::Arc;

use component_base::key::ObjectKey;
use component_base::store::Reflect;
use component_base::watch::{RawObject, watch_all};
use estimator_client::cluster_watch::watch_clusters;
use estimator_client::sync::{ClusterLookup, EstimatorSync};
use karmada_api::Cluster;
use tokio::task::JoinHandle;

use super::Context;
use crate::config::options::Options;
use crate::kube::resource;
use crate::model::binding::{BindingKey, BindingKind};

/// Start the watches, their tasks pushed to `tasks`.
pub(super) fn start(
    ctx: &Arc<Context>,
    client: &kube::Client,
    opts: &Options,
    estimators: Option<Arc<EstimatorSync>>,
    tasks: &mut Vec<JoinHandle<()>>,
) {
    let stores = ctx.stores.clone();
    let current: ClusterLookup = Arc::new(move |name: &str| stores.cluster(name));
    let clusters = Clusters(ctx.clone());
    let bindings = |kind: BindingKind| {
        let watch = Bindings(ctx.clone(), kind);
        watch_all(client.clone(), &resource(kind), watch)
    };
    tasks.extend([
        bindings(BindingKind::ResourceBinding),
        bindings(BindingKind::ClusterResourceBinding),
        watch_clusters(client.clone(), estimators.clone(), current, clusters),
    ]);
    if let Some(est) = estimators {
        // Not part of the store's readiness: scheduling does not wait for the Services.
        tasks.extend(est.watch_services(
            client.clone(),
            &opts.estimator.service_namespace,
            &opts.estimator.service_prefix,
        ));
    }
}

/// The watch of one binding kind.
struct Bindings(Arc<Context>, BindingKind);

impl Reflect<RawObject> for Bindings {
    fn upsert(&mut self, raw: RawObject) {
        self.0.on_binding(self.1, &raw);
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.on_binding_deleted(&BindingKey::of(self.1, key));
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.binding_cache().held(self.1)
    }

    fn synced(&mut self) {
        self.0.binding_cache().synced(self.1);
    }
}

/// The Cluster watch.
struct Clusters(Arc<Context>);

impl Reflect<Cluster> for Clusters {
    fn upsert(&mut self, c: Cluster) {
        self.0.on_cluster(c);
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.on_cluster_deleted(&key.name);
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.cluster_cache().held()
    }

    fn synced(&mut self) {
        self.0.cluster_cache().synced();
    }
}
