//! Event handlers, workers and the wiring of the leader's scheduling loop: what each watch
//! event does to the caches ([`crate::store`]) and the queue, and how the pieces (the kube
//! writer and API server probe of [`crate::kube`], the estimator sync, the workers) start.
//!
//! Bindings are watched as raw JSON and decoded one by one, so one malformed binding cannot
//! break the watch: it is cached as [`Cached::Malformed`] and, when it passes the event filter,
//! gets a `Scheduled=False` condition (reason `SchedulerError`) and a Warning event naming the
//! offending field. Watch errors, `410 Gone` and dropped connections are retried with backoff
//! by kube-runtime's watcher; every relist is diffed against the cache, so objects added,
//! changed or deleted while disconnected produce the same handler calls as live events.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use karmada_api::Cluster;
use kube::api::ApiResource;
use scheduler_core::estimator::Estimator;
use scheduler_core::schedule::{ScheduleConfig, Scheduler};
use serde_json::Value;
use tokio::sync::watch as tokio_watch;
use tokio::time::Instant;

use crate::config::options::Options;
use crate::cycle::assume::Assumptions;
use crate::cycle::patch::{REASON_FAILED, StatusUpdate, status_patch};
use crate::cycle::sink::{EventSink, Target, Writer};
use crate::cycle::{Cycle, CycleError};
use crate::kube::probe::release_when_reachable;
use crate::kube::resource;
use crate::kube::writer::KubeWriter;
use crate::metrics::{
    CLUSTER_RECONCILE_WORKER, IncomingEvent, Metrics, SCHEDULER_ESTIMATOR_WORKER, SCHEDULER_QUEUE,
};
use crate::model::binding::{BindingKey, BindingKind};
use crate::model::condition::ScheduledCondition;
use crate::queue::{Outcome, SchedulingQueue};
use crate::store::filter::*;
use crate::store::own_writes::OwnWrites;
use crate::store::workload::*;
use crate::store::*;
use component_base::cancel::CancellationToken;
use component_base::serve::Readiness;
use component_base::watch::{all_synced, watch_all};
use estimator_client::sync::{ClusterLookup, EstimatorSync};

/// Re-reads of a binding whose write conflicted before the attempt is handed back to the queue.
const CONFLICT_RETRIES: usize = 3;

/// Everything a worker needs.
pub struct Context {
    pub scheduler: Scheduler,
    pub scheduler_name: String,
    pub stores: Arc<Stores>,
    pub queue: Arc<SchedulingQueue>,
    pub writer: Arc<dyn Writer>,
    pub events: Arc<dyn EventSink>,
    pub metrics: Arc<Metrics>,
    /// Present with the `WorkloadAffinity` gate.
    pub workload: Option<Arc<WorkloadIndex>>,
    /// Generation bumps of our own result patches, whose watch events are not queued.
    pub own_writes: OwnWrites,
    /// Present with the `SchedulingOvercommitProtection` gate.
    pub assumptions: Option<Arc<Assumptions>>,
}

/// Where the daemon's `/debug/explain` endpoint finds the running scheduler: set once the
/// caches have synced.
pub type ExplainSlot = std::sync::OnceLock<Arc<Context>>;

/// What the daemon would decide for the cached binding `key` now, and why (see
/// [`crate::explain`]): its cycle on a copy, the assumptions copied too, nothing written.
pub async fn explain_binding(ctx: &Context, key: &BindingKey) -> Option<Value> {
    let Some(Cached::Ok(b)) = ctx.stores.binding(key) else {
        return None;
    };
    let snapshot = ctx.stores.snapshot();
    let store = crate::cycle::memory::MemoryStore::default();
    let events = crate::cycle::events::MemoryRecorder::default();
    let binding = store.insert(b.kind, b.to_json()).ok()?;
    let assumptions = ctx.assumptions.as_ref().map(|a| a.copy());
    let cycle = Cycle {
        scheduler: &ctx.scheduler,
        writer: &store,
        events: &events,
        workload_index: ctx
            .workload
            .as_deref()
            .map(|w| w as &dyn scheduler_core::framework::WorkloadGroupIndex),
        own_writes: None,
        assumptions: assumptions.as_ref(),
        want_trace: true,
    };
    let now = Time(Timestamp::now());
    let e = crate::explain::explain(&cycle, &store, &events, &binding, &snapshot, now).await;
    Some(e.to_json(&binding))
}

/// The assumption cache's key of a binding: ResourceBindings only (the reference never
/// assumes ClusterResourceBindings).
fn assumption_key(key: &BindingKey) -> Option<String> {
    (key.kind == BindingKind::ResourceBinding).then(|| format!("{}/{}", key.namespace, key.name))
}

impl Context {
    fn enqueue(&self, key: BindingKey, priority: i32, why: IncomingEvent) {
        self.metrics.incoming(why);
        self.queue.add(key, priority);
    }

    fn fan_out(&self, cluster: &Cluster) {
        for (key, binding, priority) in self.stores.all_bindings() {
            if requeue_on_cluster_change(&binding, cluster, &self.scheduler_name) {
                self.enqueue(key, priority, IncomingEvent::ClusterChanged);
            }
        }
    }

    /// A binding object was added or changed (live or from a relist).
    ///
    /// Another scheduler's binding is kept as its summary only (enough to notice when it
    /// becomes ours, whose watch event then brings the whole object), except a
    /// ResourceBinding in a workload (anti-)affinity group while that gate is on: the group
    /// filters read every scheduler's placements, as upstream's indexer does.
    pub fn upsert_binding(&self, kind: BindingKind, raw: Value) {
        let summary = summarize(&raw, &self.scheduler_name);
        let keep = summary.owned
            || (self.workload.is_some()
                && kind == BindingKind::ResourceBinding
                && raw.pointer("/spec/workloadAffinityGroups").is_some());
        let key = raw_key(kind, &raw);
        let cached = keep.then(|| decode_cached(kind, raw));
        match (&self.workload, &cached) {
            (Some(w), Some(Cached::Ok(b))) => w.assigning.observed(b),
            (Some(w), None) => w.assigning.removed(&key),
            _ => {}
        }
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(&key)) {
            match &cached {
                // No longer ours: the reference's filtered handler sees a deletion.
                _ if !summary.owned => a.release(&akey),
                Some(Cached::Ok(b)) => a.observed(&akey, &b.status),
                _ => {}
            }
        }
        let old = self
            .stores
            .bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), (cached, summary.clone()))
            .map(|(_, s)| s);
        match binding_change(old.as_ref(), Some(&summary)) {
            Some(IncomingEvent::BindingUpdate)
                if self.own_writes.is_echo(&key, summary.generation) => {}
            Some(why) => self.enqueue(key, summary.priority, why),
            None => {}
        }
    }

    /// A binding object disappeared.
    pub fn remove_binding(&self, key: &BindingKey) {
        self.own_writes.forget(key);
        if let (Some(a), Some(akey)) = (&self.assumptions, assumption_key(key)) {
            a.release(&akey);
        }
        if let Some(w) = &self.workload {
            w.assigning.removed(key);
        }
        self.stores
            .bindings
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// A cluster was added or changed.
    pub fn upsert_cluster(&self, cluster: Cluster) {
        let new = Arc::new(cluster);
        let old = self.stores.put_cluster(new.clone());
        if let Some(old) = old {
            let changes = cluster_update_fanout(&old, &new);
            if !changes.is_empty() {
                // The reference queues each object to its `ClusterReconcileWorker`; here the
                // fan-out runs at once, as an item added and processed by that worker.
                let worker = self.metrics.workqueue(CLUSTER_RECONCILE_WORKER);
                for c in changes {
                    worker.process(|| self.fan_out(&c));
                }
            }
        }
    }

    pub fn remove_cluster(&self, name: &str) {
        self.stores.drop_cluster(name);
    }

    /// Process one key; the queue outcome.
    pub async fn process(&self, key: &BindingKey) -> Outcome {
        let Some(cached) = self.stores.binding(key) else {
            return Outcome::Success;
        };
        let mut binding = match cached {
            Cached::Ok(b) => (*b).clone(),
            Cached::Malformed(m) => return self.report_malformed(&m).await,
        };
        let snapshot = self.stores.snapshot();
        let cycle = Cycle {
            scheduler: &self.scheduler,
            writer: self.writer.as_ref(),
            events: self.events.as_ref(),
            workload_index: self
                .workload
                .as_deref()
                .map(|w| w as &dyn scheduler_core::framework::WorkloadGroupIndex),
            own_writes: Some(&self.own_writes),
            assumptions: self.assumptions.as_deref(),
            want_trace: false,
        };
        let start = Instant::now();
        let mut report = None;
        for _ in 0..=CONFLICT_RETRIES {
            let r = cycle.run(&binding, &snapshot, Time(Timestamp::now())).await;
            if r.result == Err(CycleError::Conflict) {
                match self.writer.get(key).await {
                    Ok(fresh) => {
                        binding = fresh;
                        report = Some(r);
                        continue;
                    }
                    Err(e) if e.is_not_found() => return Outcome::Success,
                    Err(e) => {
                        tracing::error!(binding = %key, "re-reading after a conflict: {e}");
                        if e.is_transient() {
                            return Outcome::Unavailable;
                        }
                        report = Some(r);
                        break;
                    }
                }
            }
            report = Some(r);
            break;
        }
        let Some(report) = report else {
            return Outcome::Failure;
        };
        if let Some(t) = report.schedule_type {
            self.metrics
                .binding_schedule(t.as_str(), start.elapsed(), report.result.is_ok());
        }
        match report.result {
            Ok(()) => Outcome::Success,
            Err(e) => {
                self.metrics.incoming(IncomingEvent::ScheduleAttemptFailure);
                match e {
                    CycleError::Failed(err) => {
                        tracing::error!(binding = %key, "Failed scheduling {}: {err}", key.describe());
                        if err.is_transient() {
                            // Its writes are owed: retried as soon as the server answers.
                            Outcome::Unavailable
                        } else if err.is_unschedulable() {
                            Outcome::Unschedulable
                        } else {
                            Outcome::Failure
                        }
                    }
                    CycleError::Conflict => Outcome::Failure,
                }
            }
        }
    }

    /// A binding that does not decode: tell it, once per generation.
    async fn report_malformed(&self, m: &Malformed) -> Outcome {
        let key = m.binding.key();
        let message = format!("failed to decode {}: {}", key.describe(), m.error);
        let update = StatusUpdate {
            condition: ScheduledCondition {
                status: false,
                reason: "SchedulerError",
                message: message.clone(),
            },
            scheduled_generation: None,
            affinity_name: None,
        };
        let Some(patch) = status_patch(&m.binding.status, &update, &Time(Timestamp::now())) else {
            return Outcome::Success;
        };
        self.events.event(&m.binding, true, REASON_FAILED, message);
        match self.writer.patch(&key, Target::Status, patch).await {
            Ok(_) => Outcome::Success,
            Err(e) => {
                tracing::error!(binding = %key, "writing the decode error: {e}");
                if e.is_transient() {
                    Outcome::Unavailable
                } else {
                    Outcome::Failure
                }
            }
        }
    }
}

fn binding_key_of(kind: BindingKind, k: &str) -> BindingKey {
    let (ns, name) = k.split_once('/').unwrap_or(("", k));
    match kind {
        BindingKind::ResourceBinding => BindingKey::rb(ns, name),
        BindingKind::ClusterResourceBinding => BindingKey::crb(name),
    }
}

/// Build the scheduler-core pipeline for these flags.
pub fn build_scheduler(
    opts: &Options,
    accurate: Option<Arc<dyn Estimator>>,
) -> anyhow::Result<Scheduler> {
    let config = ScheduleConfig {
        enable_empty_workload_propagation: opts.enable_empty_workload_propagation,
        gates: opts.feature_gates.clone(),
    };
    let general = scheduler_core::general::GeneralEstimator::new(
        opts.feature_gates.customized_cluster_resource_modeling(),
    );
    let mut s = Scheduler::from_plugins_flag(&opts.plugins, config)
        .map_err(|e| anyhow::anyhow!("couldn't create scheduler: {e}"))?
        .with_estimator(Arc::new(general));
    if let Some(a) = accurate {
        s = s.with_estimator(a);
    }
    Ok(s)
}

/// The estimator client options for these flags.
pub fn estimator_options(opts: &Options) -> estimator_client::EstimatorOptions {
    opts.estimator
        .to_options(opts.disable_scheduler_estimator_in_pull_mode)
}

/// Run the scheduler until `stop`: watches, cache sync, workers. Caches are filled before the
/// first cycle; `ready` turns true once they are.
pub async fn run(
    opts: &Options,
    client: kube::Client,
    metrics: Arc<Metrics>,
    ready: Readiness,
    leading: tokio_watch::Receiver<bool>,
    stop: CancellationToken,
    explain: Option<Arc<ExplainSlot>>,
) -> anyhow::Result<()> {
    let estimators = if opts.enable_scheduler_estimator {
        let source = Arc::new(
            estimator_client::KubeServiceSource::new(client.clone())
                .with_endpoint_routing(opts.estimator.endpoint_routing),
        );
        let cache = Arc::new(estimator_client::ConnectionCache::new(
            estimator_options(opts),
            source,
        ));
        metrics.register(|r| cache.register_metrics(r));
        Some(EstimatorSync::new(
            cache,
            metrics.workqueue(SCHEDULER_ESTIMATOR_WORKER),
        ))
    } else {
        None
    };
    let accurate: Option<Arc<dyn Estimator>> = estimators.as_ref().map(|e| {
        Arc::new(estimator_client::SchedulerEstimator::new(e.cache().clone())) as Arc<dyn Estimator>
    });
    let scheduler = build_scheduler(opts, accurate)?
        .with_step_observer(Arc::new(crate::metrics::StepTimer::new(metrics.clone())));
    let priority_mode = opts
        .feature_gates
        .enabled(scheduler_core::features::PRIORITY_BASED_SCHEDULING);
    let mut queue = SchedulingQueue::new(priority_mode, opts.rate_limiter);
    if !priority_mode {
        // The reference's priority queue registers no workqueue metrics; its legacy one does.
        queue = queue.with_metrics(metrics.workqueue(SCHEDULER_QUEUE));
    }
    let stores = Arc::new(Stores::default());
    let workload = opts
        .feature_gates
        .enabled(scheduler_core::features::WORKLOAD_AFFINITY)
        .then(|| {
            Arc::new(WorkloadIndex {
                stores: stores.clone(),
                assigning: Arc::new(AssigningCache::default()),
            })
        });
    let assumptions = opts
        .feature_gates
        .scheduling_overcommit_protection()
        .then(|| Arc::new(Assumptions::default()));
    let ctx = Arc::new(Context {
        scheduler,
        scheduler_name: opts.scheduler_name.clone(),
        stores: stores.clone(),
        queue: Arc::new(queue),
        writer: Arc::new(KubeWriter::new(
            client.clone(),
            workload.as_ref().map(|w| w.assigning.clone()),
        )),
        events: Arc::new(component_base::events::start(
            client.clone(),
            opts.scheduler_name.clone(),
        )) as Arc<dyn EventSink>,
        metrics,
        workload,
        own_writes: OwnWrites::default(),
        assumptions: assumptions.clone(),
    });

    let mut watches = Vec::new();
    let mut synced = Vec::new();
    if let Some(a) = &assumptions {
        watches.push(tokio::spawn(crate::cycle::assume::gc_loop(a.clone())));
    }
    for kind in [
        BindingKind::ResourceBinding,
        BindingKind::ClusterResourceBinding,
    ] {
        let (c1, c2) = (ctx.clone(), ctx.clone());
        let (task, rx) = watch_all(
            client.clone(),
            &resource(kind),
            kind.plural(),
            move |raw: Value| c1.upsert_binding(kind, raw),
            move |k: &str| c2.remove_binding(&binding_key_of(kind, k)),
        );
        watches.push(task);
        synced.push(rx);
    }
    {
        let (c1, c2) = (ctx.clone(), ctx.clone());
        let (est1, est2) = (estimators.clone(), estimators.clone());
        let (task, rx) = watch_all(
            client.clone(),
            &ApiResource::erase::<Cluster>(&()),
            "clusters",
            move |raw: Value| match karmada_api::from_json_value::<Cluster>(raw) {
                Ok(mut c) => {
                    c.metadata.managed_fields = None;
                    if let Some(e) = &est1 {
                        let stores = c1.stores.clone();
                        let current: ClusterLookup = Arc::new(move |name: &str| {
                            stores
                                .clusters
                                .read()
                                .unwrap_or_else(|p| p.into_inner())
                                .get(name)
                                .cloned()
                        });
                        e.ensure(Arc::new(c.clone()), current);
                    }
                    c1.upsert_cluster(c);
                }
                Err(e) => tracing::error!("skipping a Cluster that does not decode: {e}"),
            },
            move |k: &str| {
                let name = k.trim_start_matches('/');
                c2.remove_cluster(name);
                if let Some(e) = &est2 {
                    e.cluster_deleted(name);
                }
            },
        );
        watches.push(task);
        synced.push(rx);
    }
    if let Some(est) = estimators.clone() {
        // Not part of the sync gate: scheduling does not wait for the estimator Services.
        watches.extend(est.watch_services(
            client.clone(),
            &opts.estimator.service_namespace,
            &opts.estimator.service_prefix,
        ));
    }

    // All caches synced before the first cycle.
    tokio::select! {
        r = all_synced(synced) => r?,
        _ = stop.cancelled() => {
            watches.iter().for_each(|w| w.abort());
            return Ok(());
        }
    }
    // `--concurrent-binding-syncs` (the reference runs one); keys are exclusive per worker.
    let worker_count = usize::try_from(opts.concurrent_binding_syncs)
        .unwrap_or(1)
        .max(1);
    tracing::info!("caches synced; starting {worker_count} scheduling workers");
    ready.set(true);
    if let Some(slot) = &explain {
        let _ = slot.set(ctx.clone());
    }

    // Bindings whose writes found no API server wait for it to answer again.
    watches.push(tokio::spawn(release_when_reachable(
        ctx.queue.clone(),
        client.clone(),
    )));
    let mut workers = Vec::new();
    for _ in 0..worker_count {
        let ctx = ctx.clone();
        let mut leading = leading.clone();
        workers.push(tokio::spawn(async move {
            loop {
                // Only while leading (the Lease may be lost and won again).
                if leading.wait_for(|l| *l).await.is_err() {
                    break;
                }
                let Some(item) = ctx.queue.pop().await else {
                    break;
                };
                if !*leading.borrow() {
                    // Lost while waiting for a key: not this attempt's to make.
                    ctx.queue.hand_back(item);
                    continue;
                }
                let outcome = ctx.process(&item.key).await;
                ctx.queue.done(item, outcome);
            }
        }));
    }
    stop.cancelled().await;
    ctx.queue.shutdown();
    for w in workers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    watches.iter().for_each(|w| w.abort());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::binding::Binding;
    use crate::model::condition::ApiFailure;
    use scheduler_core::estimator::BoxFuture;
    use serde_json::json;

    fn raw(labels: Value, generation: i64, extra_spec: Value) -> Value {
        let mut spec = json!({"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}, "placement": {}});
        if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra_spec) {
            s.extend(e);
        }
        json!({"metadata": {"name": "b", "namespace": "ns", "generation": generation, "labels": labels}, "spec": spec})
    }

    fn lbl() -> Value {
        json!({"propagationpolicy.karmada.io/permanent-id": "p"})
    }

    #[test]
    fn filtering_handler_semantics() {
        let s = |v: &Value| summarize(v, "default-scheduler");
        let a = s(&raw(lbl(), 1, json!({})));
        let b = s(&raw(lbl(), 2, json!({})));
        let same = s(&raw(lbl(), 1, json!({})));
        let suspended = s(&raw(lbl(), 2, json!({"suspension": {"scheduling": true}})));
        let other = s(&raw(lbl(), 2, json!({"schedulerName": "other"})));
        let unlabeled = s(&raw(json!({}), 2, json!({})));
        assert_eq!(
            binding_change(None, Some(&a)),
            Some(IncomingEvent::BindingAdd)
        );
        assert_eq!(binding_change(None, Some(&unlabeled)), None);
        assert_eq!(
            binding_change(Some(&a), Some(&b)),
            Some(IncomingEvent::BindingUpdate)
        );
        assert_eq!(
            binding_change(Some(&a), Some(&same)),
            None,
            "no generation change"
        );
        assert_eq!(
            binding_change(Some(&suspended), Some(&b)),
            Some(IncomingEvent::BindingAdd),
            "suspension lifted"
        );
        assert_eq!(binding_change(Some(&a), Some(&suspended)), None);
        assert_eq!(binding_change(Some(&a), Some(&other)), None);
        assert_eq!(binding_change(Some(&a), None), None);
        assert_eq!(
            s(&raw(lbl(), 1, json!({"schedulePriority": {"priority": 7}}))).priority,
            7
        );
    }

    #[test]
    fn malformed_bindings_are_cached_with_their_error() {
        let r = raw(
            lbl(),
            1,
            json!({"placement": {"spreadConstraints": [{"spreadByField": "planet"}]}}),
        );
        assert!(summarize(&r, "default-scheduler").passes);
        match decode_cached(BindingKind::ResourceBinding, r) {
            Cached::Malformed(m) => {
                assert_eq!(m.binding.key(), BindingKey::rb("ns", "b"));
                assert!(
                    m.error
                        .starts_with("spec.placement.spreadConstraints[0].spreadByField"),
                    "{}",
                    m.error
                );
                assert_eq!(m.binding.spec.resource.kind, "ConfigMap");
            }
            Cached::Ok(_) => panic!("should not decode"),
        }
    }

    fn cluster(v: Value) -> Cluster {
        let mut base = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m1", "generation": 1}, "spec": {}});
        if let (Value::Object(b), Value::Object(e)) = (&mut base, v) {
            for (k, val) in e {
                b.insert(k, val);
            }
        }
        serde_json::from_value(base).unwrap()
    }

    /// Records patches; answers with the object it was given.
    #[derive(Default)]
    struct Recording(std::sync::Mutex<Vec<(BindingKey, Target, Value)>>);

    impl Writer for Recording {
        fn patch<'a>(
            &'a self,
            key: &'a BindingKey,
            target: Target,
            patch: Value,
        ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
            self.0.lock().unwrap().push((key.clone(), target, patch));
            Box::pin(async {
                Err(ApiFailure {
                    code: 404,
                    reason: "NotFound".into(),
                    message: "gone".into(),
                })
            })
        }
        fn get<'a>(&'a self, _key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
            Box::pin(async {
                Err(ApiFailure {
                    code: 404,
                    reason: "NotFound".into(),
                    message: "gone".into(),
                })
            })
        }
    }

    /// A worker context over in-memory parts, default flags.
    fn test_context(
        writer: Arc<Recording>,
        events: crate::cycle::events::MemoryRecorder,
    ) -> Context {
        let metrics = Arc::new(Metrics::new());
        Context {
            scheduler: Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default()).unwrap(),
            scheduler_name: "default-scheduler".into(),
            stores: Arc::new(Stores::default()),
            queue: Arc::new(
                SchedulingQueue::new(false, Default::default())
                    .with_metrics(metrics.workqueue(SCHEDULER_QUEUE)),
            ),
            writer,
            events: Arc::new(events),
            metrics,
            workload: None,
            own_writes: OwnWrites::default(),
            assumptions: None,
        }
    }

    #[tokio::test]
    async fn a_malformed_binding_is_told_and_the_others_go_on() {
        let writer = Arc::new(Recording::default());
        let events = crate::cycle::events::MemoryRecorder::default();
        let ctx = test_context(writer.clone(), events.clone());
        let mut bad = raw(
            lbl(),
            1,
            json!({"placement": {"spreadConstraints": [{"spreadByField": "planet"}]}}),
        );
        bad["metadata"]["name"] = json!("bad");
        ctx.upsert_binding(BindingKind::ResourceBinding, bad);
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 1, json!({})));
        let first = ctx.queue.pop().await.unwrap();
        assert_eq!(first.key, BindingKey::rb("ns", "bad"));
        ctx.process(&first.key).await;
        let log = writer.0.lock().unwrap().clone();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].1, Target::Status);
        let cond = &log[0].2["status"]["conditions"][0];
        assert_eq!(cond["reason"], "SchedulerError");
        assert_eq!(cond["status"], "False");
        let msg = cond["message"].as_str().unwrap();
        assert!(msg.starts_with("failed to decode ResourceBinding(ns/bad): spec.placement.spreadConstraints[0].spreadByField"), "{msg}");
        let ev = events.0.lock().unwrap().clone();
        assert_eq!(ev.len(), 2, "on the binding and on its template");
        assert!(ev[0].warning && ev[0].message == msg);
        // The good binding is still queued and schedulable.
        assert_eq!(
            ctx.queue.pop().await.unwrap().key,
            BindingKey::rb("ns", "b")
        );
    }

    #[test]
    fn the_snapshot_is_shared_until_a_cluster_changes() {
        let stores = Stores::default();
        stores.put_cluster(Arc::new(cluster(json!({"metadata": {"name": "m1"}}))));
        let a = stores.snapshot();
        assert!(Arc::ptr_eq(&a, &stores.snapshot()));
        stores.put_cluster(Arc::new(cluster(json!({"metadata": {"name": "m2"}}))));
        let b = stores.snapshot();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(b.num_of_clusters(), 2);
        stores.drop_cluster("m1");
        let c = stores.snapshot();
        assert_eq!(c.num_of_clusters(), 1);
        assert_eq!(c.clusters()[0].name(), "m2");
    }

    /// Another scheduler's binding is not decoded into the cache (only its summary is kept);
    /// when it is handed to this scheduler, the update brings the whole object and queues it.
    #[tokio::test]
    async fn another_schedulers_binding_is_kept_as_a_summary_until_it_becomes_ours() {
        let writer = Arc::new(Recording::default());
        let ctx = test_context(
            writer.clone(),
            crate::cycle::events::MemoryRecorder::default(),
        );
        let key = BindingKey::rb("ns", "b");
        let other = json!({"schedulerName": "other", "clusters": [{"name": "m1", "replicas": 1}]});
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 1, other.clone()));
        assert!(ctx.stores.binding(&key).is_none(), "not decoded");
        assert_eq!(ctx.queue.lengths().active, 0);
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 2, other));
        assert_eq!(ctx.queue.lengths().active, 0, "not ours: not queued");

        let ours = json!({"schedulerName": "default-scheduler"});
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 2, ours));
        assert!(matches!(ctx.stores.binding(&key), Some(Cached::Ok(b)) if b.generation() == 2));
        assert_eq!(
            ctx.queue.lengths().active,
            1,
            "handed over: queued as an add"
        );

        // Handed away again while queued: the worker finds nothing of ours and writes nothing.
        ctx.upsert_binding(
            BindingKind::ResourceBinding,
            raw(lbl(), 3, json!({"schedulerName": "other"})),
        );
        let item = ctx.queue.pop().await.unwrap();
        assert_eq!(ctx.process(&item.key).await, Outcome::Success);
        assert!(ctx.stores.binding(&key).is_none());
        assert!(writer.0.lock().unwrap().is_empty(), "no write");
    }

    /// The depth gauge goes back to zero once the queue is drained.
    #[tokio::test]
    async fn queue_depth_follows_pops() {
        let ctx = test_context(
            Arc::new(Recording::default()),
            crate::cycle::events::MemoryRecorder::default(),
        );
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 1, json!({})));
        let depth = |ctx: &Context| {
            ctx.metrics
                .encode()
                .unwrap()
                .lines()
                .find(|l| {
                    l.starts_with("workqueue_depth{") && l.contains(r#"name="scheduler-queue""#)
                })
                .map(|l| l.rsplit(' ').next().unwrap().to_string())
        };
        assert_eq!(depth(&ctx).as_deref(), Some("1"));
        let item = ctx.queue.pop().await.unwrap();
        assert_eq!(depth(&ctx).as_deref(), Some("0"));
        ctx.queue.done(item, Outcome::Success);
        assert_eq!(depth(&ctx).as_deref(), Some("0"));
    }

    /// The watch event of our own result patch is not queued; anyone else's bump still is.
    #[tokio::test]
    async fn the_echo_of_our_own_write_is_not_queued() {
        let ctx = test_context(
            Arc::new(Recording::default()),
            crate::cycle::events::MemoryRecorder::default(),
        );
        let key = BindingKey::rb("ns", "b");
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 1, json!({})));
        let item = ctx.queue.pop().await.unwrap();
        ctx.queue.done(item, Outcome::Success);
        assert_eq!(ctx.queue.lengths().active, 0);

        ctx.own_writes.expect(&key, 1);
        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 2, json!({})));
        assert_eq!(ctx.queue.lengths().active, 0, "our own write");
        assert!(matches!(ctx.stores.binding(&key), Some(Cached::Ok(b)) if b.generation() == 2));

        ctx.upsert_binding(BindingKind::ResourceBinding, raw(lbl(), 3, json!({})));
        assert_eq!(ctx.queue.lengths().active, 1, "someone else's spec change");
    }

    #[test]
    fn workload_index_finds_groups_and_prefers_newer_written_copies() {
        use scheduler_core::framework::WorkloadGroupIndex as _;
        let stores = Arc::new(Stores::default());
        let index = WorkloadIndex {
            stores: stores.clone(),
            assigning: Arc::new(AssigningCache::default()),
        };
        let rb = |name: &str, group: &str, rv: &str| {
            Binding::decode(
                BindingKind::ResourceBinding,
                json!({
                    "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
                    "spec": {"resource": {"apiVersion": "v1", "kind": "Pod", "name": name},
                             "workloadAffinityGroups": {"affinityGroup": group}}
                }),
            )
            .unwrap()
        };
        for b in [rb("a", "g1", "5"), rb("b", "g1", "6"), rb("c", "g2", "7")] {
            let s = Summary {
                passes: true,
                owned: true,
                generation: 1,
                priority: 0,
            };
            stores
                .bindings
                .write()
                .unwrap()
                .insert(b.key(), (Some(Cached::Ok(Arc::new(b))), s));
        }
        let mut names: Vec<String> = index
            .by_affinity_group("g1")
            .unwrap()
            .iter()
            .map(|b| b.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
        assert!(index.by_anti_affinity_group("g1").unwrap().is_empty());
        // A written copy is served until the watch catches up, then follows the watch.
        index.assigning.written(&rb("a", "g1", "9"));
        assert_eq!(
            index
                .assigning("ns", "a")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("9")
        );
        index.assigning.observed(&rb("a", "g1", "8"));
        assert_eq!(
            index
                .assigning("ns", "a")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("9")
        );
        index.assigning.observed(&rb("a", "g1", "10"));
        assert_eq!(
            index
                .assigning("ns", "a")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("10")
        );
        index.assigning.removed(&BindingKey::rb("ns", "a"));
        assert!(index.assigning("ns", "a").is_none());
    }

    /// Our estimator connection flags reach the estimator client; unset, they are the
    /// reference's behaviour.
    #[test]
    fn estimator_connection_flags_reach_the_client() {
        let parse = |args: &[&str]| match crate::config::options::parse(args) {
            Ok(crate::config::options::Invocation::Run(o)) => *o,
            other => panic!("{other:?}"),
        };
        let d = estimator_options(&parse(&[]));
        assert_eq!(
            (d.server_name, d.endpoint_routing, d.failure_policy),
            (None, false, estimator_client::FailurePolicy::FailAll)
        );
        let o = estimator_options(&parse(&[
            "--scheduler-estimator-tls-server-name=estimator.test",
            "--scheduler-estimator-endpoint-routing=true",
            "--scheduler-estimator-failure-policy=per-cluster",
        ]));
        assert_eq!(
            (
                o.server_name.as_deref(),
                o.endpoint_routing,
                o.failure_policy
            ),
            (
                Some("estimator.test"),
                true,
                estimator_client::FailurePolicy::PerCluster
            )
        );
    }

    #[test]
    fn cluster_update_rules() {
        let c1 = cluster(json!({}));
        let status_only = cluster(json!({"status": {"kubernetesVersion": "v1"}}));
        assert!(cluster_update_fanout(&c1, &status_only).is_empty());
        let relabeled =
            cluster(json!({"metadata": {"name": "m1", "generation": 1, "labels": {"a": "b"}}}));
        assert_eq!(cluster_update_fanout(&c1, &relabeled).len(), 2);
        let tainted = cluster(json!({"metadata": {"name": "m1", "generation": 2}}));
        assert_eq!(cluster_update_fanout(&c1, &tainted).len(), 2);
        let deleting = cluster(
            json!({"metadata": {"name": "m1", "generation": 1, "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
        );
        assert_eq!(cluster_update_fanout(&c1, &deleting).len(), 1);
    }

    #[test]
    fn fan_out_matches_the_observed_affinity() {
        let b = |placement: Value, status: Value| {
            Binding::decode(BindingKind::ResourceBinding, json!({
                "metadata": {"name": "b", "namespace": "ns", "generation": 2},
                "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}, "placement": placement},
                "status": status
            })).unwrap()
        };
        let m1 = cluster(json!({}));
        assert!(requeue_on_cluster_change(
            &b(json!({}), json!({})),
            &m1,
            "default-scheduler"
        ));
        assert!(requeue_on_cluster_change(
            &b(
                json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
                json!({})
            ),
            &m1,
            "default-scheduler"
        ));
        assert!(!requeue_on_cluster_change(
            &b(
                json!({"clusterAffinity": {"clusterNames": ["m2"]}}),
                json!({})
            ),
            &m1,
            "default-scheduler"
        ));
        assert!(!requeue_on_cluster_change(
            &b(json!({}), json!({})),
            &m1,
            "other"
        ));
        let terms = json!({"clusterAffinities": [
            {"affinityName": "a", "clusterNames": ["m2"]},
            {"affinityName": "b", "clusterNames": ["m1"]}
        ]});
        assert!(
            requeue_on_cluster_change(
                &b(terms.clone(), json!({"schedulerObservedGeneration": 1})),
                &m1,
                "default-scheduler"
            ),
            "generation not observed"
        );
        assert!(!requeue_on_cluster_change(
            &b(
                terms.clone(),
                json!({"schedulerObservedGeneration": 2, "schedulerObservingAffinityName": "a"})
            ),
            &m1,
            "default-scheduler"
        ));
        assert!(requeue_on_cluster_change(
            &b(
                terms,
                json!({"schedulerObservedGeneration": 2, "schedulerObservingAffinityName": "b"})
            ),
            &m1,
            "default-scheduler"
        ));
    }
}
