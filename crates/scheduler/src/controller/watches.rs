//! The watches and what each of their events does: applied to the caches by their one writer
//! ([`crate::store::Writer`]), whose answer — the bindings to queue — is queued here; a
//! cluster change's fan-out runs as an item of the reference's cluster reconcile worker,
//! applied at once. Watched: ResourceBindings, ClusterResourceBindings and Clusters (the
//! caches the first cycle waits for) and, with estimators, the estimator Services.

use std::sync::{Arc, MutexGuard};

use component_base::key::ObjectKey;
use component_base::store::Reflect;
use component_base::watch::{RawObject, watch_all};
use estimator_client::cluster_watch::watch_clusters;
use estimator_client::sync::{ClusterLookup, EstimatorSync};
use karmada_api::Cluster;
use tokio::sync::watch as tokio_watch;
use tokio::task::JoinHandle;

use super::Context;
use crate::config::options::Options;
use crate::kube::resource;
use crate::metrics::CLUSTER_RECONCILE_WORKER;
use crate::model::binding::{BindingKey, BindingKind};
use crate::store::Writer;
use crate::store::writer::Queued;

/// Start the watches, their tasks pushed to `tasks`; one receiver per cache, true once it has
/// synced.
pub(super) fn start(
    ctx: &Arc<Context>,
    client: &kube::Client,
    opts: &Options,
    estimators: Option<Arc<EstimatorSync>>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Vec<tokio_watch::Receiver<bool>> {
    let stores = ctx.stores.clone();
    let current: ClusterLookup = Arc::new(move |name: &str| stores.cluster(name));
    let clusters = Clusters(ctx.clone());
    let bindings = |kind: BindingKind| {
        let watch = Bindings(ctx.clone(), kind);
        watch_all(client.clone(), &resource(kind), watch)
    };
    let watches = [
        bindings(BindingKind::ResourceBinding),
        bindings(BindingKind::ClusterResourceBinding),
        watch_clusters(client.clone(), estimators.clone(), current, clusters),
    ];
    if let Some(est) = estimators {
        // Not part of the sync gate: scheduling does not wait for the estimator Services.
        tasks.extend(est.watch_services(
            client.clone(),
            &opts.estimator.service_namespace,
            &opts.estimator.service_prefix,
        ));
    }
    let (watches, synced): (Vec<_>, _) = watches.into_iter().unzip();
    tasks.extend(watches);
    synced
}

impl Context {
    pub(super) fn enqueue(&self, q: Queued) {
        self.metrics.incoming(q.why);
        self.queue.add(q.key, q.priority);
    }

    pub(super) fn writer(&self) -> MutexGuard<'_, Writer> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The watch of one binding kind.
struct Bindings(Arc<Context>, BindingKind);

impl Reflect<RawObject> for Bindings {
    fn upsert(&mut self, raw: RawObject) {
        let queued = self.0.writer().upsert_binding(self.1, &raw);
        queued.into_iter().for_each(|q| self.0.enqueue(q));
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.writer().remove_binding(&BindingKey::of(self.1, key));
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.writer().held_bindings(self.1)
    }
}

/// The Cluster watch.
struct Clusters(Arc<Context>);

impl Reflect<Cluster> for Clusters {
    fn upsert(&mut self, c: Cluster) {
        let (ctx, changes) = (&self.0, self.0.writer().upsert_cluster(c));
        if !changes.is_empty() {
            // The reference queues each object to its `ClusterReconcileWorker`; here the
            // fan-out runs at once, as an item added and processed by that worker.
            let worker = ctx.metrics.workqueue(CLUSTER_RECONCILE_WORKER);
            for c in changes {
                worker.process(|| {
                    let queued = ctx.writer().fan_out(&c);
                    queued.into_iter().for_each(|q| ctx.enqueue(q));
                });
            }
        }
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.0.writer().remove_cluster(&key.name);
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.writer().held_clusters()
    }
}
