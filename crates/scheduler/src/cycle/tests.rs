//! The cycle's unit tests: the daemon's cycle against the in-memory API server, with
//! scripted faults.

use super::*;
use karmada_api::work::TargetCluster;
use scheduler_core::schedule::{BindingInput, Decision as CoreDecision};
use serde_json::Value;

use crate::controller::own_writes::OwnWrites;
use crate::cycle::sink::{ObjectApi, Target};
use crate::model::binding::{BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use pretty_assertions::assert_eq;
use scheduler_core::estimator::BoxFuture;
use scheduler_core::schedule::ScheduleConfig;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Mutex;

use crate::cycle::memory::MemoryStore;

/// The daemon's [`MemoryStore`] holding one binding, with a log of the writes and
/// scripted faults.
struct FakeApi {
    store: MemoryStore,
    key: BindingKey,
    log: Mutex<Vec<(Target, Value)>>,
    /// Scripted faults of the next writes, in order (`Fault::None` = answer normally).
    faults: Mutex<VecDeque<Fault>>,
}

/// What goes wrong with one write.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// Refused or reset before the server saw it.
    NotSent,
    /// Applied by the server, the answer lost on the way back.
    ResponseLost,
    /// `503 Service Unavailable`, not applied.
    Unavailable,
    /// Refused with this answer, not applied.
    Rejected(ApiFailure),
}

impl FakeApi {
    fn new(object: Value) -> Self {
        let store = MemoryStore::default();
        let key = store
            .insert(BindingKind::ResourceBinding, object)
            .expect("a valid binding")
            .key();
        Self {
            store,
            key,
            log: Mutex::new(Vec::new()),
            faults: Mutex::new(VecDeque::new()),
        }
    }

    fn binding(&self) -> Binding {
        self.store.binding(&self.key).expect("stored")
    }

    /// Someone else writes the object (bumps resourceVersion).
    fn external_write(&self, patch: Value) {
        self.store.external_write(&self.key, &patch);
    }

    fn apply(&self, target: Target, patch: &Value) -> Result<Binding, ApiFailure> {
        self.store.apply(&self.key, target, patch)
    }
}

impl ObjectApi<BindingKey, Binding> for FakeApi {
    fn patch<'a>(
        &'a self,
        _key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move {
            self.log.lock().unwrap().push((target, patch.clone()));
            let lost = |message: &str| ApiFailure {
                code: 0,
                reason: String::new(),
                message: message.into(),
            };
            match self.faults.lock().unwrap().pop_front() {
                Some(Fault::NotSent) => return Err(lost("connection refused")),
                Some(Fault::Unavailable) => {
                    return Err(ApiFailure {
                        code: 503,
                        reason: "ServiceUnavailable".into(),
                        message: "the server is currently unable to handle the request".into(),
                    });
                }
                Some(Fault::Rejected(f)) => return Err(f),
                Some(Fault::ResponseLost) => {
                    self.apply(target, &patch)?;
                    return Err(lost("connection reset by peer"));
                }
                Some(Fault::None) | None => {}
            }
            self.apply(target, &patch)
        })
    }

    fn get<'a>(&'a self, _key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move { Ok(self.binding()) })
    }
}

#[derive(Default)]
struct Events(Mutex<Vec<(bool, &'static str, String)>>);
impl EventSink for Events {
    fn event(&self, _b: &Binding, warning: bool, reason: &'static str, message: String) {
        self.0.lock().unwrap().push((warning, reason, message));
    }
}

fn cluster(name: &str) -> karmada_api::Cluster {
    serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name}, "spec": {},
        "status": {
            "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "resourceSummary": {"allocatable": {"pods": "100", "cpu": "100"}}
        }
    }))
    .unwrap()
}

fn binding_json(placement: Value, replicas: i32) -> Value {
    json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "ns", "generation": 2,
                     "labels": {"binding.karmada.io/managed-by": "x"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"},
                 "replicas": replicas, "placement": placement}
    })
}

fn cycle<'a>(
    scheduler: &'a Scheduler,
    api: &'a FakeApi,
    events: &'a Events,
    own_writes: Option<&'a OwnWrites>,
) -> Cycle<'a> {
    Cycle {
        scheduler,
        api,
        events,
        parts: Parts {
            after_write: own_writes.map(|o| o as &dyn crate::cycle::sink::ResultHook),
            ..Parts::default()
        },
    }
}

fn now() -> Time {
    Time("2026-07-01T10:00:00Z".parse().unwrap())
}

fn scheduler() -> Scheduler {
    Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default()).unwrap()
}

/// A writer whose answers take a while, as a real API server's do.
struct Slow<'a>(&'a FakeApi);

impl ObjectApi<BindingKey, Binding> for Slow<'_> {
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            self.0.patch(key, target, patch).await
        })
    }

    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        self.0.get(key)
    }
}

/// Someone else writes the binding (the patch `write` makes of it) right before the first
/// status patch reaches the server.
struct BeforeFirstStatus<'a> {
    api: &'a FakeApi,
    write: fn(&Binding) -> Value,
    done: Mutex<bool>,
}

impl<'a> BeforeFirstStatus<'a> {
    fn new(api: &'a FakeApi, write: fn(&Binding) -> Value) -> Self {
        Self {
            api,
            write,
            done: Mutex::new(false),
        }
    }
}

impl ObjectApi<BindingKey, Binding> for BeforeFirstStatus<'_> {
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        if target == Target::Status && !std::mem::replace(&mut *self.done.lock().unwrap(), true) {
            self.api.external_write((self.write)(&self.api.binding()));
        }
        self.api.patch(key, target, patch)
    }

    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        self.api.get(key)
    }
}

/// The status of a decision meets a newer generation on its conflict re-read: it is not
/// merged onto it (that would mark the new spec scheduled, or move the observed generation
/// back); the attempt ends in a conflict and is decided again on the fresh object.
#[tokio::test]
async fn a_status_decided_for_an_old_generation_is_not_written_over_a_new_one() {
    let api = FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided",
                                     "replicaDivisionPreference": "Aggregated"}}),
        2,
    ));
    // Scaled (a new generation) as a user would while the result patch was being written.
    let scaling = BeforeFirstStatus::new(
        &api,
        |b| json!({"metadata": {"generation": b.generation() + 1}, "spec": {"replicas": 5}}),
    );
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let c = Cycle {
        api: &scaling,
        ..cycle(&s, &api, &events, None)
    };
    let report = c.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(report.result, Err(CycleError::Conflict));
    let stored = api.binding();
    assert_eq!(stored.spec.replicas, 5);
    assert_ne!(
        stored.status.scheduler_observed_generation,
        stored.generation()
    );
    assert!(
        stored.status.conditions.is_empty(),
        "no condition written for the old decision: {:?}",
        stored.status.conditions
    );
    // Decided again on the fresh object, it completes for the new generation.
    let again = cycle(&s, &api, &events, None)
        .run(&stored, &snapshot, now())
        .await;
    assert_eq!(again.result, Ok(()));
    let done = api.binding();
    assert_eq!(done.status.scheduler_observed_generation, done.generation());
    assert_eq!(
        done.spec.clusters.iter().map(|c| c.replicas).sum::<i32>(),
        5
    );
}

/// With `SchedulingOvercommitProtection`, two bindings scheduled at the same time into a
/// cluster with room for one never both get it: the first reserves before its write, the
/// second's estimate already counts that. Without the gate both are placed (the cluster
/// is overcommitted), as the reference would too if it scheduled concurrently.
#[tokio::test(start_paused = true)]
async fn concurrent_cycles_do_not_spend_the_same_capacity() {
    let placed = |gate: bool| async move {
        let wants = |name: &str| {
            let mut o = binding_json(
                json!({"clusterAffinity": {"clusterNames": ["m1"]},
                       "replicaScheduling": {"replicaSchedulingType": "Divided",
                                             "replicaDivisionPreference": "Aggregated"}}),
                3,
            );
            o["metadata"]["name"] = json!(name);
            o["spec"]["resource"]["name"] = json!(name);
            o["spec"]["replicaRequirements"] = json!({"resourceRequest": {"cpu": "30"}});
            FakeApi::new(o)
        };
        let (a, b) = (wants("a"), wants("b"));
        let (slow_a, slow_b) = (Slow(&a), Slow(&b));
        let events = Events::default();
        let s = scheduler().with_estimator(std::sync::Arc::new(
            scheduler_core::general::GeneralEstimator::default(),
        ));
        let snapshot = Snapshot::from_clusters([cluster("m1")]);
        let assumptions = Assumptions::default();
        let cycle_of = |api| Cycle {
            api,
            parts: Parts {
                assumptions: gate.then_some(&assumptions),
                ..Parts::default()
            },
            ..cycle(&s, &a, &events, None)
        };
        let (ca, cb) = (cycle_of(&slow_a), cycle_of(&slow_b));
        let (ba, bb) = (a.binding(), b.binding());
        let _ = tokio::join!(ca.run(&ba, &snapshot, now()), cb.run(&bb, &snapshot, now()));
        [a.binding(), b.binding()]
            .iter()
            .map(|x| x.spec.clusters.iter().map(|c| c.replicas).sum::<i32>())
            .sum::<i32>()
    };
    // m1 has 100 CPUs; each binding asks 3 × 30.
    assert_eq!(placed(false).await, 6, "without the gate both are placed");
    assert_eq!(placed(true).await, 3, "with it, only one");
}

/// The daemon's step timer observes the algorithm histogram once per step per cycle,
/// with the reference's `schedule_step` labels.
#[tokio::test]
async fn one_cycle_observes_every_algorithm_step() {
    // Divided, so that one pass runs (a Duplicated binding gets the echo pass too).
    let api = FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided",
                                     "replicaDivisionPreference": "Aggregated"}}),
        2,
    ));
    let events = Events::default();
    let metrics = std::sync::Arc::new(crate::metrics::Metrics::new());
    let s = scheduler().with_step_observer(std::sync::Arc::new(crate::metrics::StepTimer::new(
        metrics.clone(),
    )));
    let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
    let cycle = cycle(&s, &api, &events, None);
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(report.result, Ok(()));
    let text = metrics.encode().unwrap();
    for step in ["Filter", "Score", "Select", "AssignReplicas"] {
        let sample = format!(
            "karmada_scheduler_scheduling_algorithm_duration_seconds_count{{schedule_step=\"{step}\"}} 1\n"
        );
        assert!(text.contains(&sample), "{sample} missing in\n{text}");
    }
    // m2 fails the affinity, m1 passes; the score plugins run once; the plugin calls of
    // this first binding are within the sampling budget.
    for sample in [
        r#"karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",result="Success"} 1"#,
        r#"karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",result="Unschedulable"} 1"#,
        r#"karmada_scheduler_framework_extension_point_duration_seconds_count{extension_point="Score",result="Success"} 1"#,
        r#"karmada_scheduler_plugin_execution_duration_seconds_count{plugin="ClusterAffinity",extension_point="Filter",result="Unschedulable"} 1"#,
        r#"karmada_scheduler_plugin_execution_duration_seconds_count{plugin="ClusterAffinity",extension_point="ScoreExtensionNormalize",result="Success"} 1"#,
    ] {
        assert!(text.contains(sample), "{sample} missing in\n{text}");
    }
}

/// A Duplicated binding that already holds some clusters: the reference's echo pass
/// (the watch event of its own write) sees every chosen cluster as held and writes the
/// order that converges; one status patch follows.
#[tokio::test]
async fn duplicated_result_converges_like_the_echo_pass() {
    let mut object = binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1", "m2", "m3"]}}),
        2,
    );
    object["spec"]["clusters"] = json!([{"name": "m3", "replicas": 2}]);
    let api = FakeApi::new(object);
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2"), cluster("m3")]);
    let own = OwnWrites::default();
    let cycle = cycle(&s, &api, &events, Some(&own));
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(report.result, Ok(()));
    let log = api.log.lock().unwrap().clone();
    let mains: Vec<&Value> = log
        .iter()
        .filter(|(t, _)| *t == Target::Main)
        .map(|(_, p)| &p["spec"]["clusters"])
        .collect();
    let statuses = log.iter().filter(|(t, _)| *t == Target::Status).count();
    // ClusterLocality puts the held m3 first; once all three are held, the order is
    // the snapshot's again.
    assert_eq!(
        mains,
        [
            &json!([{"name": "m3", "replicas": 2}, {"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]),
            &json!([{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}, {"name": "m3", "replicas": 2}]),
        ]
    );
    assert_eq!(statuses, 1);
    assert!(own.is_echo(&api.binding().key(), api.binding().generation()));
    // What a second pass over the stored object gives is what is stored.
    let stored = api.binding();
    let again = s
        .schedule_binding(
            BindingInput {
                snapshot: &snapshot,
                spec: &stored.spec,
                status: &stored.status,
                workload_index: None,
                assumed: None,
            },
            false,
        )
        .await;
    match again.result {
        Ok(CoreDecision::Scheduled(r)) => assert_eq!(r, stored.spec.clusters),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        api.binding().status.scheduler_observed_generation,
        api.binding().generation()
    );
}

/// The daemon's retry of one binding, reduced to its rules: each attempt starts from the
/// copy the watch would hold (`stale`: the one the decision was first made on, as when the
/// echo has not arrived; otherwise the server's), a conflict re-reads and runs again, any
/// other failure is tried again later. Returns the attempts it took.
async fn retry_until_done(
    cycle: &Cycle<'_>,
    api: &FakeApi,
    first: &Binding,
    snapshot: &Snapshot,
) -> usize {
    for attempt in 1..=20 {
        let mut b = if attempt % 2 == 0 {
            first.clone()
        } else {
            api.binding()
        };
        for _ in 0..4 {
            match cycle.run(&b, snapshot, now()).await.result {
                Err(CycleError::Conflict) => b = api.binding(),
                Ok(()) => return attempt,
                Err(CycleError::Failed(e)) => {
                    assert!(e.is_transient(), "only the scripted faults fail: {e}");
                    break;
                }
                Err(CycleError::Reread(e)) => panic!("no re-reads asked for: {e}"),
            }
        }
    }
    panic!("not done after 20 attempts: {:?}", api.binding());
}

/// Every script of faults over the first three writes (refused, 503, applied with the
/// answer lost), with the retries reading a stale or a fresh copy: the binding always ends
/// with the placement and the status of one decision, and is never written with a second
/// placement. A new process finds an unfinished binding from the object alone (the odd
/// attempts start from the server's copy, as a restarted scheduler's list would).
#[tokio::test]
async fn every_fault_script_ends_with_placement_and_status() {
    use Fault::*;
    let kinds = [None, NotSent, Unavailable, ResponseLost];
    let strategies = [
        json!({"clusterAffinity": {"clusterNames": ["m1", "m2"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
        json!({"clusterAffinity": {"clusterNames": ["m1", "m2"]},
               "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                     "weightPreference": {"staticWeightList": [
                                         {"targetCluster": {"clusterNames": ["m1"]}, "weight": 1},
                                         {"targetCluster": {"clusterNames": ["m2"]}, "weight": 2}]}}}),
        json!({"clusterAffinity": {"clusterNames": ["m1", "m2"]},
               "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
    ];
    let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
    let s = scheduler();
    for placement in &strategies {
        // The placement a fault-free run writes.
        let clean = FakeApi::new(binding_json(placement.clone(), 3));
        let events = Events::default();
        let own = OwnWrites::default();
        cycle(&s, &clean, &events, Some(&own))
            .run(&clean.binding(), &snapshot, now())
            .await;
        let want = clean.binding().spec.clusters;
        assert!(!want.is_empty());
        for script in 0..kinds.len().pow(3) {
            let faults: Vec<Fault> = (0..3)
                .map(|i| kinds[script / kinds.len().pow(i) % kinds.len()].clone())
                .collect();
            let api = FakeApi::new(binding_json(placement.clone(), 3));
            *api.faults.lock().unwrap() = faults.iter().cloned().collect();
            let first = api.binding();
            let own = OwnWrites::default();
            let cycle = cycle(&s, &api, &events, Some(&own));
            retry_until_done(&cycle, &api, &first, &snapshot).await;
            let b = api.binding();
            let case = format!("{placement} with {faults:?}");
            assert_eq!(b.spec.clusters, want, "{case}");
            assert_eq!(
                b.status.scheduler_observed_generation,
                b.generation(),
                "{case}"
            );
            let scheduled: Vec<_> = b
                .status
                .conditions
                .iter()
                .filter(|c| c.type_ == "Scheduled")
                .collect();
            assert_eq!(scheduled.len(), 1, "{case}");
            assert_eq!(
                (scheduled[0].status.as_str(), scheduled[0].reason.as_str()),
                ("True", "Success"),
                "{case}"
            );
            assert!(b.status.last_scheduled_time.is_some(), "{case}");
            assert!(!crate::model::decision::unfinished_write(&b), "{case}");
            // Every placement written is the one decision's.
            let log = api.log.lock().unwrap().clone();
            for (target, patch) in &log {
                if let (Target::Main, Some(c)) = (target, patch.pointer("/spec/clusters")) {
                    let written: Vec<TargetCluster> = serde_json::from_value(c.clone()).unwrap();
                    assert!(
                        written == want
                            || written
                                .iter()
                                .map(|t| &t.name)
                                .collect::<std::collections::BTreeSet<_>>()
                                == want.iter().map(|t| &t.name).collect(),
                        "{case}: wrote {c}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn first_schedule_writes_result_then_one_status_patch() {
    let api = std::sync::Arc::new(FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
        0,
    )));
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
    let own = OwnWrites::default();
    let cycle = cycle(&s, &api, &events, Some(&own));
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(
        (report.schedule_type, report.result),
        (Some(ScheduleType::ReconcileSchedule), Ok(()))
    );
    let log = api.log.lock().unwrap().clone();
    assert_eq!(log.len(), 2);
    assert_eq!(
        log[0],
        (
            Target::Main,
            json!({
                "metadata": {"annotations": {"policy.karmada.io/applied-placement": r#"{"clusterAffinity":{"clusterNames":["m1"]}}"#,
                                             "karmada-scheduler-rs.io/result-generation": "3"},
                             "resourceVersion": "1"},
                "spec": {"clusters": [{"name": "m1"}]}
            })
        )
    );
    assert_eq!(
        log[1],
        (
            Target::Status,
            json!({
                "metadata": {"resourceVersion": "2"},
                "status": {"conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                           "message": "Binding has been scheduled successfully.", "lastTransitionTime": "2026-07-01T10:00:00Z"}],
                           "lastScheduledTime": "2026-07-01T10:00:00Z", "schedulerObservedGeneration": 3}
            })
        )
    );
    // Generation 3 is our own write: observed at once, and its watch event is an echo.
    assert_eq!(api.binding().generation(), 3);
    assert!(own.is_echo(&api.binding().key(), 3));
    assert_eq!(
        events.0.lock().unwrap().clone(),
        vec![(
            false,
            "ScheduleBindingSucceed",
            "Binding has been scheduled successfully. Result: {m1:0}".to_string()
        )]
    );
    // Nothing changed: a second cycle only rewrites lastScheduledTime (Duplicated rule).
    let later = Time("2026-07-01T10:00:05Z".parse().unwrap());
    cycle.run(&api.binding(), &snapshot, later).await;
    let log = api.log.lock().unwrap().clone();
    assert_eq!(log.len(), 3);
    assert_eq!(
        log[2].1["status"],
        json!({"lastScheduledTime": "2026-07-01T10:00:05Z"})
    );
}

#[tokio::test]
async fn no_fit_clears_clusters_and_is_not_retried() {
    let mut obj = binding_json(json!({"clusterAffinity": {"clusterNames": ["gone"]}}), 0);
    obj["spec"]["clusters"] = json!([{"name": "m1"}]);
    let api = FakeApi::new(obj);
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let cycle = cycle(&s, &api, &events, None);
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(report.result, Ok(()));
    let b = api.binding();
    assert!(b.spec.clusters.is_empty());
    let cond = &b.status.conditions[0];
    assert_eq!(
        (cond.reason.as_str(), cond.status.as_str()),
        ("NoClusterFit", "False")
    );
    assert_eq!(
        cond.message,
        "0/1 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint."
    );
    assert_eq!(
        b.status.scheduler_observed_generation, 0,
        "failure does not observe the generation"
    );
    assert_eq!(events.0.lock().unwrap()[0].1, "ScheduleBindingFailed");
}

#[tokio::test]
async fn stale_cache_result_is_rejected_and_reported_as_conflict() {
    let api = FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
        0,
    ));
    let stale = api.binding();
    api.external_write(json!({"spec": {"clusters": [{"name": "m2"}]}}));
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let cycle = cycle(&s, &api, &events, None);
    let report = cycle.run(&stale, &snapshot, now()).await;
    assert_eq!(report.result, Err(CycleError::Conflict));
    assert_eq!(
        api.binding().spec.clusters[0].name,
        "m2",
        "newer write kept"
    );
    // Rerun on the fresh object succeeds.
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(report.result, Ok(()));
    assert_eq!(api.binding().spec.clusters[0].name, "m1");
}

#[tokio::test]
async fn status_conflict_recomputes_on_the_fresh_object() {
    let api = std::sync::Arc::new(FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
        0,
    )));
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    // Another controller adds FullyApplied between our two writes: the result patch goes
    // through, then FullyApplied lands, then our status patch.
    let fully_applied = BeforeFirstStatus::new(
        &api,
        |_| json!({"status": {"conditions": [{"type": "FullyApplied", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": "2026-07-01T09:00:00Z"}]}}),
    );
    let cycle = Cycle {
        api: &fully_applied,
        ..cycle(&s, &api, &events, None)
    };
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert_eq!(report.result, Ok(()));
    let types: Vec<String> = api
        .binding()
        .status
        .conditions
        .iter()
        .map(|c| c.type_.clone())
        .collect();
    assert_eq!(types, vec!["FullyApplied", "Scheduled"]);
}

#[tokio::test]
async fn failed_result_patch_is_aggregated_into_the_condition() {
    let api = FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
        0,
    ));
    api.faults
        .lock()
        .unwrap()
        .push_back(Fault::Rejected(ApiFailure {
            code: 403,
            reason: "QuotaExceeded".into(),
            message: "admission webhook denied the request: quota exceeded".into(),
        }));
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let cycle = cycle(&s, &api, &events, None);
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert!(matches!(report.result, Err(CycleError::Failed(_))));
    let b = api.binding();
    assert_eq!(b.status.conditions[0].reason, "QuotaExceeded");
    assert_eq!(
        b.status.conditions[0].message,
        "admission webhook denied the request: quota exceeded"
    );
    assert!(b.spec.clusters.is_empty());
}

#[tokio::test]
async fn up_to_date_binding_only_syncs_the_generation() {
    let mut obj = binding_json(
        json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}),
        2,
    );
    obj["metadata"]["annotations"] = json!({"policy.karmada.io/applied-placement": r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted"}}"#});
    obj["spec"]["clusters"] = json!([{"name": "m1", "replicas": 2}]);
    obj["status"] = json!({"schedulerObservedGeneration": 1});
    let api = FakeApi::new(obj);
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let cycle = cycle(&s, &api, &events, None);
    let stale = api.binding();
    let rv = stale.resource_version().unwrap().to_string();
    let report = cycle.run(&stale, &snapshot, now()).await;
    assert_eq!((report.schedule_type, report.result), (None, Ok(())));
    // Preconditioned on the copy it was decided on, like every write.
    assert_eq!(
        api.log.lock().unwrap().clone(),
        vec![(
            Target::Status,
            json!({"status": {"schedulerObservedGeneration": 2}, "metadata": {"resourceVersion": rv}})
        )]
    );
    assert!(events.0.lock().unwrap().is_empty());
    // A stale copy (the object moved on, here its observed generation back to 1 by someone
    // else) is refused, not written over: the attempt ends in a conflict, decided again.
    api.external_write(json!({"status": {"schedulerObservedGeneration": 1}}));
    let report = cycle.run(&stale, &snapshot, now()).await;
    assert_eq!(report.result, Err(CycleError::Conflict));
    assert_eq!(api.binding().status.scheduler_observed_generation, 1);
}

#[tokio::test]
async fn affinity_terms_fail_over_and_record_the_observed_name() {
    let placement = json!({"clusterAffinities": [
        {"affinityName": "primary", "clusterNames": ["gone"]},
        {"affinityName": "backup", "clusterNames": ["m1"]}
    ]});
    let api = FakeApi::new(binding_json(placement, 0));
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let cycle = cycle(&s, &api, &events, None);
    assert_eq!(
        cycle.run(&api.binding(), &snapshot, now()).await.result,
        Ok(())
    );
    let b = api.binding();
    assert_eq!(b.status.scheduler_observed_affinity_name, "backup");
    assert_eq!(b.spec.clusters, vec![TargetCluster::new("m1", 0)]);
    let ev = events.0.lock().unwrap().clone();
    assert_eq!(ev.len(), 2);
    assert_eq!(
        ev[0].2,
        "failed to schedule ResourceBinding(ns/b) with clusterAffiliates index(0): 0/1 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint."
    );
    assert_eq!(ev[1].1, "ScheduleBindingSucceed");
}

/// A permit whose term ended before the attempt's writes: the API its gate lent sends nothing
/// (the announced own write is withdrawn) and the attempt ends fenced, for the worker to hand
/// the key back.
#[tokio::test]
async fn a_lapsed_permit_sends_nothing() {
    let api = std::sync::Arc::new(FakeApi::new(binding_json(
        json!({"clusterAffinity": {"clusterNames": ["m1"]}}),
        0,
    )));
    let events = Events::default();
    let s = scheduler();
    let snapshot = Snapshot::from_clusters([cluster("m1")]);
    let fence = component_base::fence::Fence::closed();
    fence.renewed(fence.now(), std::time::Duration::from_secs(60));
    let permit = fence.permit().expect("an open fence gives a permit");
    fence.close();
    let own = OwnWrites::default();
    let gate = component_base::write::WriteGate::new(api.clone());
    let lent = gate.under(&permit);
    let mut cycle = cycle(&s, &api, &events, Some(&own));
    cycle.api = &lent;
    let report = cycle.run(&api.binding(), &snapshot, now()).await;
    assert!(
        matches!(&report.result, Err(CycleError::Failed(e)) if e.is_fenced()),
        "{:?}",
        report.result
    );
    assert!(api.log.lock().unwrap().is_empty(), "nothing sent");
    assert_eq!(own.len(), 0, "the announced write is withdrawn");
    assert!(api.binding().spec.clusters.is_empty());
}
