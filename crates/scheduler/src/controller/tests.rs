//! The handlers and the workers on in-memory parts: filtering, malformed bindings, the
//! snapshot, the echo of our own writes, the workload index and the cluster fan-out.

use std::sync::Arc;

use karmada_api::Cluster;
use scheduler_core::estimator::BoxFuture;
use scheduler_core::schedule::{ScheduleConfig, Scheduler};
use serde_json::{Value, json};

use super::Context;
use super::filter::{binding_change, cluster_update_fanout, requeue_on_cluster_change};
use crate::cycle::sink::{ObjectApi, Target};
use crate::metrics::{IncomingEvent, Metrics, SCHEDULER_QUEUE};
use crate::model::binding::summarize;
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use crate::queue::{Outcome, SchedulingQueue};
use crate::store::assume::Assumptions;
use crate::store::{Cached, caches, decode_cached};
use component_base::watch::RawObject;

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

/// A status that moves `schedulerObservedGeneration` back (a stale writer) queues the binding;
/// one that moves it forward, or leaves it, does not.
#[test]
fn an_observed_generation_moved_back_queues_the_binding() {
    let s = |observed: i64| {
        let mut v = raw(lbl(), 4, json!({}));
        v["status"] = json!({"schedulerObservedGeneration": observed});
        summarize(&v, "default-scheduler")
    };
    assert_eq!(s(2).observed_generation, 2);
    assert_eq!(
        binding_change(Some(&s(4)), Some(&s(2))),
        Some(IncomingEvent::BindingUpdate)
    );
    assert_eq!(binding_change(Some(&s(2)), Some(&s(4))), None);
    assert_eq!(binding_change(Some(&s(4)), Some(&s(4))), None);
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
    match decode_cached(BindingKind::ResourceBinding, &r.to_string(), &r) {
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

impl ObjectApi<BindingKey, Binding> for Recording {
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

impl Context {
    /// A binding's watch event, from its text.
    fn upsert_binding(&self, kind: BindingKind, text: &str) {
        let raw = RawObject::from_json(text).unwrap();
        self.on_binding(kind, &raw);
    }
}

/// A worker context over in-memory parts, default flags.
fn test_context(writer: Arc<Recording>, events: component_base::events::MemoryEvents) -> Context {
    with_caches(writer, events, false, None)
}

/// [`test_context`] with the caches the gates add: the workload index with
/// `workload_affinity`, and `assumptions`.
fn with_caches(
    writer: Arc<Recording>,
    events: component_base::events::MemoryEvents,
    workload_affinity: bool,
    assumptions: Option<Arc<Assumptions>>,
) -> Context {
    let metrics = Arc::new(Metrics::new());
    let (stores, binding_cache, cluster_cache) = caches(workload_affinity, assumptions.clone());
    let workload = binding_cache.workload_index().cloned();
    Context {
        scheduler: Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default()).unwrap(),
        scheduler_name: "default-scheduler".into(),
        stores,
        after_write: super::own_writes::AfterWrite {
            own_writes: Arc::default(),
            workload: workload.clone(),
        },
        workload,
        binding_cache: std::sync::Mutex::new(binding_cache),
        cluster_cache: std::sync::Mutex::new(cluster_cache),
        queue: Arc::new(
            SchedulingQueue::new(false, Default::default())
                .with_metrics(metrics.workqueue(SCHEDULER_QUEUE)),
        ),
        gate: component_base::write::WriteGate::new(writer),
        events: Arc::new(events),
        metrics,
        assumptions,
    }
}

#[tokio::test]
async fn a_malformed_binding_is_told_and_the_others_go_on() {
    let writer = Arc::new(Recording::default());
    let events = component_base::events::MemoryEvents::default();
    let ctx = test_context(writer.clone(), events.clone());
    let mut bad = raw(
        lbl(),
        1,
        json!({"placement": {"spreadConstraints": [{"spreadByField": "planet"}]}}),
    );
    bad["metadata"]["name"] = json!("bad");
    ctx.upsert_binding(BindingKind::ResourceBinding, &bad.to_string());
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 1, json!({})).to_string(),
    );
    let first = ctx.queue.pop().await.unwrap();
    assert_eq!(first.key, BindingKey::rb("ns", "bad"));
    ctx.process(&first.key, &open_permit()).await;
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

/// A malformed binding whose bad field is huge (its value quoted in the decode error) still
/// gets its condition written: the message is cut to the CRD's 32,768 characters, which the
/// API server would otherwise refuse with 422 for ever.
#[tokio::test]
async fn a_huge_decode_error_is_written_cut_to_the_crd_limit() {
    let writer = Arc::new(Recording::default());
    let events = component_base::events::MemoryEvents::default();
    let ctx = test_context(writer.clone(), events);
    let huge = format!("planet-{}", "x".repeat(200_000));
    let mut bad = raw(
        lbl(),
        1,
        json!({"placement": {"spreadConstraints": [{"spreadByField": huge}]}}),
    );
    bad["metadata"]["name"] = json!("huge");
    ctx.upsert_binding(BindingKind::ResourceBinding, &bad.to_string());
    let first = ctx.queue.pop().await.unwrap();
    ctx.process(&first.key, &open_permit()).await;
    let log = writer.0.lock().unwrap().clone();
    assert_eq!(log.len(), 1);
    let cond = &log[0].2["status"]["conditions"][0];
    assert_eq!(cond["reason"], "SchedulerError");
    let msg = cond["message"].as_str().unwrap();
    assert_eq!(
        msg.chars().count(),
        crate::model::condition::MAX_MESSAGE_CHARS,
        "{}",
        &msg[..200]
    );
    assert!(
        msg.starts_with("failed to decode ResourceBinding(ns/huge): spec.placement.spreadConstraints[0].spreadByField"),
        "{}",
        &msg[..200]
    );
}

#[test]
fn the_snapshot_is_shared_until_a_cluster_changes() {
    let (stores, _, mut clusters) = caches(false, None);
    clusters.upsert(Arc::new(cluster(json!({"metadata": {"name": "m1"}}))));
    let a = stores.snapshot();
    assert!(Arc::ptr_eq(&a, &stores.snapshot()));
    clusters.upsert(Arc::new(cluster(json!({"metadata": {"name": "m2"}}))));
    let b = stores.snapshot();
    assert!(!Arc::ptr_eq(&a, &b));
    assert_eq!(b.num_of_clusters(), 2);
    clusters.remove("m1");
    let c = stores.snapshot();
    assert_eq!(c.num_of_clusters(), 1);
    assert_eq!(c.clusters()[0].name(), "m2");
}

/// The store is ready once both binding kinds and the Clusters have listed, not before.
#[test]
fn the_store_is_ready_once_every_watch_has_listed() {
    let (stores, mut bindings, mut clusters) = caches(false, None);
    assert!(!stores.is_ready());
    bindings.synced(BindingKind::ResourceBinding);
    bindings.synced(BindingKind::ResourceBinding);
    clusters.synced();
    assert!(!stores.is_ready(), "ClusterResourceBindings not listed yet");
    bindings.synced(BindingKind::ClusterResourceBinding);
    assert!(stores.is_ready());
}

/// Another scheduler's binding is not decoded into the cache (only its summary is kept);
/// when it is handed to this scheduler, the update brings the whole object and queues it.
#[tokio::test]
async fn another_schedulers_binding_is_kept_as_a_summary_until_it_becomes_ours() {
    let writer = Arc::new(Recording::default());
    let ctx = test_context(
        writer.clone(),
        component_base::events::MemoryEvents::default(),
    );
    let key = BindingKey::rb("ns", "b");
    let other = json!({"schedulerName": "other", "clusters": [{"name": "m1", "replicas": 1}]});
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 1, other.clone()).to_string(),
    );
    assert!(ctx.stores.binding(&key).is_none(), "not decoded");
    assert_eq!(ctx.queue.lengths().active, 0);
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 2, other).to_string(),
    );
    assert_eq!(ctx.queue.lengths().active, 0, "not ours: not queued");

    let ours = json!({"schedulerName": "default-scheduler"});
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 2, ours).to_string(),
    );
    assert!(matches!(ctx.stores.binding(&key), Some(Cached::Ok(b)) if b.generation() == 2));
    assert_eq!(
        ctx.queue.lengths().active,
        1,
        "handed over: queued as an add"
    );

    // Handed away again while queued: the worker finds nothing of ours and writes nothing.
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 3, json!({"schedulerName": "other"})).to_string(),
    );
    let item = ctx.queue.pop().await.unwrap();
    assert_eq!(
        ctx.process(&item.key, &open_permit()).await,
        Some(Outcome::Success)
    );
    assert!(ctx.stores.binding(&key).is_none());
    assert!(writer.0.lock().unwrap().is_empty(), "no write");
}

/// A binding whose member status nests 10,000 levels (the API server keeps it; Go decodes it)
/// is cached decoded and queued like any other, and so is its neighbour.
#[tokio::test]
async fn a_deeply_nested_status_is_cached_and_queued() {
    let ctx = test_context(
        Arc::new(Recording::default()),
        component_base::events::MemoryEvents::default(),
    );
    let mut v = raw(lbl(), 1, json!({}));
    v["status"] = json!({"aggregatedStatus": [{"clusterName": "m1", "status": "DEEP"}]});
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let text = v.to_string().replace(r#""DEEP""#, &deep);
    ctx.upsert_binding(BindingKind::ResourceBinding, &text);
    let mut other = raw(lbl(), 1, json!({}));
    other["metadata"]["name"] = json!("other");
    ctx.upsert_binding(BindingKind::ResourceBinding, &other.to_string());
    match ctx.stores.binding(&BindingKey::rb("ns", "b")) {
        Some(Cached::Ok(b)) => assert_eq!(
            b.status.aggregated_status[0]
                .status
                .as_ref()
                .unwrap()
                .as_str(),
            deep
        ),
        other => panic!("not decoded: {other:?}"),
    }
    let mut popped = vec![
        ctx.queue.pop().await.unwrap().key,
        ctx.queue.pop().await.unwrap().key,
    ];
    popped.sort_by(|a, b| a.object.name.cmp(&b.object.name));
    assert_eq!(
        popped,
        vec![BindingKey::rb("ns", "b"), BindingKey::rb("ns", "other")]
    );
}

/// The depth gauge goes back to zero once the queue is drained.
#[tokio::test]
async fn queue_depth_follows_pops() {
    let ctx = test_context(
        Arc::new(Recording::default()),
        component_base::events::MemoryEvents::default(),
    );
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 1, json!({})).to_string(),
    );
    let depth = |ctx: &Context| {
        ctx.metrics
            .encode()
            .unwrap()
            .lines()
            .find(|l| l.starts_with("workqueue_depth{") && l.contains(r#"name="scheduler-queue""#))
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
        component_base::events::MemoryEvents::default(),
    );
    let key = BindingKey::rb("ns", "b");
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 1, json!({})).to_string(),
    );
    let item = ctx.queue.pop().await.unwrap();
    ctx.queue.done(item, Outcome::Success);
    assert_eq!(ctx.queue.lengths().active, 0);

    ctx.after_write.own_writes.expect(&key, 1);
    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 2, json!({})).to_string(),
    );
    assert_eq!(ctx.queue.lengths().active, 0, "our own write");
    assert!(matches!(ctx.stores.binding(&key), Some(Cached::Ok(b)) if b.generation() == 2));

    ctx.upsert_binding(
        BindingKind::ResourceBinding,
        &raw(lbl(), 3, json!({})).to_string(),
    );
    assert_eq!(ctx.queue.lengths().active, 1, "someone else's spec change");
}

#[test]
fn workload_index_finds_groups_and_prefers_newer_written_copies() {
    use scheduler_core::framework::WorkloadGroupIndex as _;
    let ctx = with_caches(
        Arc::new(Recording::default()),
        component_base::events::MemoryEvents::default(),
        true,
        None,
    );
    let index = ctx.workload.clone().unwrap();
    let rb = |name: &str, group: &str, rv: &str| {
        Binding::decode(
            BindingKind::ResourceBinding,
            &json!({
                "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
                "spec": {"resource": {"apiVersion": "v1", "kind": "Pod", "name": name},
                         "workloadAffinityGroups": {"affinityGroup": group}}
            }),
        )
        .unwrap()
    };
    for b in [rb("a", "g1", "5"), rb("b", "g1", "6"), rb("c", "g2", "7")] {
        ctx.upsert_binding(BindingKind::ResourceBinding, &b.to_json().to_string());
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
    index.written(&rb("a", "g1", "9"));
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
        Binding::decode(BindingKind::ResourceBinding, &json!({
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
    // Present but empty: no term to read, so any cluster change requeues it (Go v1.18.2
    // indexes term 0 here and its cluster event handler panics).
    assert!(requeue_on_cluster_change(
        &b(
            json!({"clusterAffinities": []}),
            json!({"schedulerObservedGeneration": 2})
        ),
        &m1,
        "default-scheduler"
    ));
}

/// A permit of a replica without leader election (never fenced).
fn open_permit() -> component_base::fence::Permit {
    component_base::fence::Fence::unfenced().permit().unwrap()
}

/// Bindings that are scheduled (an own write expected, an assumption kept, a written copy
/// for the workload index) and then deleted leave nothing in the handlers' structures, also
/// when the answer to a write comes back after the deletion was seen: no copy is kept for a
/// binding the caches no longer hold, so they stay within a bound however many bindings go.
#[tokio::test(start_paused = true)]
async fn deleted_bindings_leave_nothing_behind() {
    let assumptions = Arc::new(Assumptions::default());
    let ctx = with_caches(
        Arc::new(Recording::default()),
        component_base::events::MemoryEvents::default(),
        true,
        Some(assumptions.clone()),
    );
    let workload = ctx.workload.clone().unwrap();
    let n = 10_000;
    for i in 0..n {
        let name = format!("b{i}");
        let raw = json!({
            "metadata": {"name": name, "namespace": "ns", "generation": 1, "resourceVersion": "1",
                         "labels": lbl()},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": name},
                     "replicas": 2, "placement": {},
                     "workloadAffinityGroups": {"affinityGroup": "g"}}
        });
        ctx.upsert_binding(BindingKind::ResourceBinding, &raw.to_string());
        let key = BindingKey::rb("ns", &name);
        let binding = Binding::decode(BindingKind::ResourceBinding, &raw).unwrap();
        // The cycle: announce the write, assume its result, the write lands.
        ctx.after_write.own_writes.expect(&key, 1);
        assumptions
            .assume(
                &format!("ns/{name}"),
                &binding.spec,
                &[karmada_api::work::TargetCluster::new("m1", 2)],
                Default::default(),
            )
            .unwrap()
            .keep();
        if i % 2 == 0 {
            workload.written(&binding);
            ctx.on_binding_deleted(&key);
        } else {
            // The deletion is seen before the write's answer is.
            ctx.on_binding_deleted(&key);
            workload.written(&binding);
        }
        assert!(
            workload.assigning.len() <= 1,
            "{} written copies after {i} bindings",
            workload.assigning.len()
        );
    }
    assert_eq!(ctx.after_write.own_writes.len(), 0);
    assert!(assumptions.is_empty());
    assert_eq!(ctx.stores.binding_count(), 0);
    // The queue forgets them as each is popped once more and found gone.
    while let Ok(Some(item)) =
        tokio::time::timeout(std::time::Duration::from_secs(3600), ctx.queue.pop()).await
    {
        let outcome = ctx.process(&item.key, &open_permit()).await;
        assert_eq!(outcome, Some(Outcome::Success));
        ctx.queue.done(item, Outcome::Success);
    }
    assert_eq!(ctx.queue.lengths().active, 0);
}
