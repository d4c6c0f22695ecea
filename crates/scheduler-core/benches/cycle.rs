//! One full scheduling cycle (filter, score, estimate, select, assign) per binding, at 10, 100,
//! 1,000 and 5,000 clusters, for each replica strategy. Criterion's time per iteration is the
//! time per binding. The general estimator is the only estimator (no network).
//!
//! On Linux the time measured is the benchmark thread's on-CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), so that numbers taken on a shared, busy host still say what one
//! binding costs; set `CYCLE_BENCH_WALL=1` for wall-clock time.
//!
//! The `cycle/...` groups schedule every binding against one snapshot, which then remembers
//! what bindings ask about its clusters (see `scheduler_core::prepared`). With
//! `CYCLE_BENCH_FRESH=1`, the `cycle-fresh-snapshot/...` groups also build a new snapshot of
//! the same clusters for every binding, as the daemon does today.
//!
//! `cargo bench -p scheduler-core --bench cycle`

use std::collections::BTreeMap;
use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use karmada_api::cluster::{
    ApiEnablement, ApiResource, Cluster, ClusterSpec, ClusterStatus, ResourceSummary,
};
use karmada_api::policy::{
    ClusterAffinity, ClusterPreferences, DynamicWeightFactor, Placement, ReplicaDivisionPreference,
    ReplicaSchedulingStrategy, ReplicaSchedulingType, SpreadConstraint, SpreadFieldValue,
    StaticClusterWeight,
};
use karmada_api::work::{
    ObjectReference, ReplicaRequirements, ResourceBindingSpec, ResourceBindingStatus,
};
use scheduler_core::features::FeatureGates;
use scheduler_core::general::GeneralEstimator;
use scheduler_core::schedule::{BindingInput, Decision, ScheduleConfig, Scheduler};
use scheduler_core::snapshot::Snapshot;

const SIZES: [usize; 4] = [10, 100, 1_000, 5_000];
/// Replicas of every Divided binding; 10 clusters hold 900.
const REPLICAS: i32 = 200;

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Time spent on the CPU by this thread, when the platform can tell.
#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Option<Duration> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the valid pointer it is given.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// Run `f` `iters` times and return the time it took: on-CPU time when available.
fn measure(iters: u64, mut f: impl FnMut()) -> Duration {
    let wall = std::env::var_os("CYCLE_BENCH_WALL").is_some();
    let (cpu0, t0) = (if wall { None } else { thread_cpu_time() }, Instant::now());
    for _ in 0..iters {
        f();
    }
    match (cpu0, thread_cpu_time()) {
        (Some(a), Some(b)) if !wall => b.saturating_sub(a),
        _ => t0.elapsed(),
    }
}

fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

fn cluster(i: usize) -> Cluster {
    let mut c = Cluster::new(&format!("member{i:05}"), ClusterSpec::default());
    c.metadata.labels = Some(
        [
            ("env", if i.is_multiple_of(2) { "prod" } else { "dev" }),
            ("tier", ["0", "1", "2"][i % 3]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    );
    c.spec.provider = "cloud".into();
    c.spec.region = format!("region-{}", i % 8);
    c.spec.zones = vec![format!("zone-{}", i % 16)];
    c.status = Some(ClusterStatus {
        api_enablements: vec![ApiEnablement {
            group_version: "apps/v1".into(),
            resources: vec![ApiResource {
                name: "deployments".into(),
                kind: "Deployment".into(),
            }],
        }],
        resource_summary: Some(ResourceSummary {
            allocatable: list(&[("cpu", "64"), ("memory", "256Gi"), ("pods", "110")]),
            allocated: list(&[("cpu", "8"), ("memory", "32Gi"), ("pods", "20")]),
            ..Default::default()
        }),
        ..Default::default()
    });
    c
}

fn tier(t: &str, weight: i64) -> StaticClusterWeight {
    StaticClusterWeight {
        target_cluster: ClusterAffinity {
            label_selector: Some(LabelSelector {
                match_labels: Some([("tier".to_string(), t.to_string())].into_iter().collect()),
                match_expressions: None,
            }),
            ..Default::default()
        },
        weight,
    }
}

fn placement(strategy: &str) -> Placement {
    let divided = |pref, wp| ReplicaSchedulingStrategy {
        replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
        replica_division_preference: Some(pref),
        weight_preference: wp,
    };
    let replica_scheduling = match strategy {
        "duplicated" => ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
            ..Default::default()
        },
        "static-weight" => divided(
            ReplicaDivisionPreference::Weighted,
            Some(ClusterPreferences {
                static_weight_list: vec![tier("0", 2), tier("1", 1), tier("2", 1)],
                dynamic_weight: None,
            }),
        ),
        "aggregated" => divided(ReplicaDivisionPreference::Aggregated, None),
        _ => divided(
            ReplicaDivisionPreference::Weighted,
            Some(ClusterPreferences {
                static_weight_list: vec![],
                dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
            }),
        ),
    };
    let spread_constraints = if strategy == "dynamic-by-region" {
        vec![
            SpreadConstraint {
                spread_by_field: Some(SpreadFieldValue::Region),
                min_groups: 2,
                max_groups: 3,
                ..Default::default()
            },
            SpreadConstraint {
                spread_by_field: Some(SpreadFieldValue::Cluster),
                min_groups: 3,
                max_groups: 10,
                ..Default::default()
            },
        ]
    } else {
        vec![]
    };
    Placement {
        // Matches every cluster, so the affinity filter does real work.
        cluster_affinity: Some(ClusterAffinity {
            label_selector: Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "In".into(),
                    values: Some(vec!["prod".into(), "dev".into()]),
                }]),
                match_labels: None,
            }),
            ..Default::default()
        }),
        spread_constraints,
        replica_scheduling: Some(replica_scheduling),
        ..Default::default()
    }
}

fn binding(strategy: &str) -> ResourceBindingSpec {
    ResourceBindingSpec {
        resource: ObjectReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "default".into(),
            name: "web".into(),
            uid: "7c5f1a6e-2d3b-4c8e-9f10-1a2b3c4d5e6f".into(),
            ..Default::default()
        },
        replicas: if strategy == "duplicated" {
            3
        } else {
            REPLICAS
        },
        replica_requirements: Some(ReplicaRequirements {
            resource_request: list(&[("cpu", "500m"), ("memory", "512Mi")]),
            ..Default::default()
        }),
        placement: Some(placement(strategy)),
        ..Default::default()
    }
}

fn cycle(c: &mut Criterion) {
    let gates = FeatureGates::new();
    let scheduler = Scheduler::from_plugins_flag(
        &["*"],
        ScheduleConfig {
            gates: gates.clone(),
            ..Default::default()
        },
    )
    .expect("in-tree plugins")
    .with_estimator(Arc::new(GeneralEstimator::new(
        gates.customized_cluster_resource_modeling(),
    )));
    let status = ResourceBindingStatus::default();
    for strategy in [
        "duplicated",
        "static-weight",
        "dynamic-weight",
        "aggregated",
        "dynamic-by-region",
    ] {
        let mut group = c.benchmark_group(format!("cycle/{strategy}"));
        let spec = binding(strategy);
        for n in SIZES {
            let snapshot = Snapshot::from_clusters((0..n).map(cluster));
            let input = BindingInput {
                snapshot: &snapshot,
                spec: &spec,
                status: &status,
                workload_index: None,
                assumed: None,
            };
            // Sanity: every configuration schedules.
            let outcome = block_on(scheduler.schedule_binding(input, false));
            assert!(
                matches!(outcome.result, Ok(Decision::Scheduled(ref c)) if !c.is_empty()),
                "{strategy}/{n}: {:?}",
                outcome.result
            );
            group.bench_with_input(BenchmarkId::from_parameter(n), &input, |b, input| {
                b.iter_custom(|iters| {
                    measure(iters, || {
                        black_box(block_on(scheduler.schedule_binding(*input, false)));
                    })
                });
            });
        }
        group.finish();
    }
}

/// The daemon's pattern: a snapshot built from the shared clusters for every binding.
fn cycle_fresh_snapshot(c: &mut Criterion) {
    if std::env::var_os("CYCLE_BENCH_FRESH").is_none() {
        return;
    }
    let gates = FeatureGates::new();
    let scheduler = Scheduler::from_plugins_flag(
        &["*"],
        ScheduleConfig {
            gates: gates.clone(),
            ..Default::default()
        },
    )
    .expect("in-tree plugins")
    .with_estimator(Arc::new(GeneralEstimator::new(
        gates.customized_cluster_resource_modeling(),
    )));
    let status = ResourceBindingStatus::default();
    for strategy in [
        "duplicated",
        "static-weight",
        "dynamic-weight",
        "aggregated",
        "dynamic-by-region",
    ] {
        let mut group = c.benchmark_group(format!("cycle-fresh-snapshot/{strategy}"));
        let spec = binding(strategy);
        for n in SIZES {
            let clusters: Vec<Arc<Cluster>> = (0..n).map(|i| Arc::new(cluster(i))).collect();
            let run = || {
                let snapshot = Snapshot::new(clusters.iter().cloned());
                let input = BindingInput {
                    snapshot: &snapshot,
                    spec: &spec,
                    status: &status,
                    workload_index: None,
                    assumed: None,
                };
                block_on(scheduler.schedule_binding(input, false))
            };
            assert!(matches!(run().result, Ok(Decision::Scheduled(ref c)) if !c.is_empty()));
            group.bench_function(BenchmarkId::from_parameter(n), |b| {
                b.iter_custom(|iters| {
                    measure(iters, || {
                        black_box(run());
                    })
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, cycle, cycle_fresh_snapshot);
criterion_main!(benches);
