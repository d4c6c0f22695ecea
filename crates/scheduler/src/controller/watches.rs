//! The watches that feed the handlers: ResourceBindings, ClusterResourceBindings and Clusters
//! (the caches the first cycle waits for) and, with estimators, the estimator Services.

use std::sync::Arc;

use tokio::sync::watch as tokio_watch;
use tokio::task::JoinHandle;

use super::Context;
use super::handlers::{Bindings, Clusters};
use crate::config::options::Options;
use crate::kube::resource;
use crate::model::binding::BindingKind;
use component_base::watch::watch_all;
use estimator_client::cluster_watch::watch_clusters as watch_clusters_of;
use estimator_client::sync::{ClusterLookup, EstimatorSync};

/// Start the watches, their tasks pushed to `tasks`; one receiver per cache, true once it has
/// synced.
pub(super) fn start(
    ctx: &Arc<Context>,
    client: &kube::Client,
    opts: &Options,
    estimators: Option<Arc<EstimatorSync>>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Vec<tokio_watch::Receiver<bool>> {
    let mut synced = Vec::new();
    for kind in [
        BindingKind::ResourceBinding,
        BindingKind::ClusterResourceBinding,
    ] {
        let (task, rx) = watch_bindings(ctx, client, kind);
        tasks.push(task);
        synced.push(rx);
    }
    let (task, rx) = watch_clusters(ctx, client, estimators.clone());
    tasks.push(task);
    synced.push(rx);
    if let Some(est) = estimators {
        // Not part of the sync gate: scheduling does not wait for the estimator Services.
        tasks.extend(est.watch_services(
            client.clone(),
            &opts.estimator.service_namespace,
            &opts.estimator.service_prefix,
        ));
    }
    synced
}

fn watch_bindings(
    ctx: &Arc<Context>,
    client: &kube::Client,
    kind: BindingKind,
) -> (JoinHandle<()>, tokio_watch::Receiver<bool>) {
    let watch = Bindings(ctx.clone(), kind);
    watch_all(client.clone(), &resource(kind), kind.plural(), watch)
}

fn watch_clusters(
    ctx: &Arc<Context>,
    client: &kube::Client,
    estimators: Option<Arc<EstimatorSync>>,
) -> (JoinHandle<()>, tokio_watch::Receiver<bool>) {
    let stores = ctx.stores.clone();
    let current: ClusterLookup = Arc::new(move |name: &str| stores.cluster(name));
    watch_clusters_of(client.clone(), estimators, current, Clusters(ctx.clone()))
}
