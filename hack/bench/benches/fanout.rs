//! Fan-out cost: one binding asked of 1, 100 and 1,000 estimators on loopback.
//!
//! One tonic server plays every cluster (the cluster name is in the request), but each
//! cluster has its own Service and its own connection, as in production. Two servers:
//!
//! * `instant/*`: answers at once, so the numbers are the CPU cost of the client *and* the
//!   server per call (on a 2-core machine that is what limits 1,000 calls);
//! * `rtt10ms/*`: answers after 10 ms, like an estimator that computes or sits across a
//!   network. `rtt10ms/concurrent/{100,1000}` stay near one 10 ms round trip (plus the CPU
//!   cost above), while `rtt10ms/sequential/10` pays one round trip per cluster.
//!
//! Run: `cargo bench --manifest-path hack/bench/Cargo.toml --bench fanout` (under a minute).

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, SchedulerEstimator,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::Cluster;
use karmada_api::cluster::ClusterSpec;
use karmada_api::work::{ObjectReference, ReplicaRequirements};
use scheduler_core::estimator::{Ask, EstimateRequest, Estimator};
use testenv::estimator::{Behaviour, FakeEstimator, Running, external_name_service};

struct World {
    estimator: SchedulerEstimator,
    clusters: Vec<Cluster>,
}

async fn world(n: usize, port: u16) -> World {
    let names: Vec<String> = (0..n).map(|i| format!("member-{i}")).collect();
    let source = Arc::new(InMemoryServiceSource::with_objects(
        names
            .iter()
            .map(|c| external_name_service(c, "127.0.0.1", port)),
        [],
    ));
    let options = EstimatorOptions {
        timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let cache = Arc::new(ConnectionCache::new(options, source));
    let clusters: Vec<Cluster> = names
        .iter()
        .map(|name| {
            Cluster::new(
                name,
                ClusterSpec {
                    sync_mode: "Push".into(),
                    ..Default::default()
                },
            )
        })
        .collect();
    let _ = cache.ensure_all(&clusters).await;
    assert_eq!(cache.clusters().len(), n);
    World {
        estimator: SchedulerEstimator::new(cache),
        clusters,
    }
}

/// The fake answering 10 for every cluster after `delay`; serves until dropped.
async fn start_server(delay: Duration) -> Running {
    FakeEstimator::from_fn(move |_| Behaviour::AnswerAfter(10, delay))
        .unrecorded()
        .serve()
        .await
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let resource = ObjectReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "nginx".into(),
        ..Default::default()
    };
    let reqs = ReplicaRequirements {
        resource_request: [("cpu".to_string(), Quantity("500m".into()))].into(),
        namespace: "default".into(),
        ..Default::default()
    };
    let request = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: Some(&reqs),
        components: &[],
        namespace: "default",
        assumed: None,
    };

    for (group_name, delay, sizes, sequential) in [
        (
            "instant",
            Duration::ZERO,
            &[1usize, 100, 1000][..],
            100usize,
        ),
        (
            "rtt10ms",
            Duration::from_millis(10),
            &[1usize, 100, 1000][..],
            10usize,
        ),
    ] {
        let server = rt.block_on(start_server(delay));
        let port = server.addr.port();
        let mut group = c.benchmark_group(group_name);
        for &n in sizes {
            let w = rt.block_on(world(n, port));
            let refs: Vec<&Cluster> = w.clusters.iter().collect();
            group.bench_with_input(BenchmarkId::new("concurrent", n), &n, |b, _| {
                b.to_async(&rt).iter(|| async {
                    let got = w.estimator.estimate(&refs, request).await.unwrap();
                    assert_eq!(got.len(), n);
                })
            });
            if n == 100 {
                let few = &refs[..sequential];
                group.bench_with_input(BenchmarkId::new("sequential", sequential), &n, |b, _| {
                    b.to_async(&rt).iter(|| async {
                        for cluster in few {
                            let one = std::slice::from_ref(cluster);
                            w.estimator.estimate(one, request).await.unwrap();
                        }
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
