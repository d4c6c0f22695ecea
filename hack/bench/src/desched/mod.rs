//! `descheduler`: one descheduling pass over N bindings × M clusters, the Go
//! karmada-descheduler v1.18.2 and ours in turn on the same control plane, with a stub
//! estimator answering `GetUnschedulableReplicas` from [`unschedulable_answer`] behind M
//! `ExternalName` Services; the fair ceiling of a bare client doing the same work
//! (`templates/desched.md` tells what is measured).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use testenv::estimator::{Behaviour, FakeEstimator, Running, bare_client, external_name_service};
use testenv::{TestEnv, free_port};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::jobs::{apply_all, apply_retrying, in_flight, normal_event, retrying};
use crate::observe::binding_api;
use crate::plane::{self, log};
use crate::procs::{cpu_seconds, memory_kib};
use crate::promtext;
use crate::scenario::Scenario;
use crate::workload::cluster_name;
use testenv::rng::fnv1a;

mod report;
pub use report::markdown;

/// The stub estimator's latency per call.
const LATENCY: Duration = Duration::from_millis(1);

/// One descheduler's pass.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeschedSide {
    pub name: String,
    /// Seconds from the process start to the last expected write (None: not all written).
    pub pass_s: Option<f64>,
    pub written: usize,
    pub estimator_calls: u64,
    pub peak_rss_kib: u64,
    pub cpu_s: f64,
    /// Seconds from the process start to the first expected write seen (the poll is every
    /// 200 ms): start-up, cache sync and connections, as near as polling can tell.
    #[serde(default)]
    pub first_write_s: Option<f64>,
    /// CPU seconds the kube-apiserver and etcd spent during this side's pass.
    #[serde(default)]
    pub control_plane_cpu_s: f64,
    /// `DescheduleBindingSucceed` Events seen in the namespace (the reference records two per
    /// binding written: on the binding and on its workload).
    #[serde(default)]
    pub events: usize,
    /// Seconds from the process start to the last of those Events.
    #[serde(default)]
    pub last_event_s: Option<f64>,
    /// Requests the Karmada API server served during the pass, by verb and resource.
    #[serde(default)]
    pub requests: BTreeMap<String, u64>,
    /// Seconds from the process start until 10, 50 and 90 % of the expected binding writes
    /// were seen: whether a pass is slow to start, slow throughout or slow to finish.
    #[serde(default)]
    pub write_deciles: Vec<f64>,
    /// The same, and the last, from the API server's own record of each write (the time of
    /// the binding's `Update` in `managedFields`, in whole seconds since the second the
    /// process started): the bench's watch of ~125 KB bindings can fall behind the writes
    /// while the pass keeps the machine busy.
    #[serde(default)]
    pub stored_deciles: Vec<f64>,
    /// The descheduler's own histograms at the end of its pass (None where it exports none).
    #[serde(default)]
    pub own: Option<OwnMetrics>,
}

/// Read from a descheduler's `/metrics` at the end of its pass: where its time went.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OwnMetrics {
    /// `workqueue_work_duration_seconds{name="descheduler"}`: sum and count, one per binding
    /// worked on (its estimator fan-out, rules and write).
    pub work_sum_s: f64,
    pub work_count: f64,
    /// `karmada_scheduler_estimator_client_request_duration_seconds`, over every cluster.
    pub call_sum_s: f64,
    pub call_count: f64,
}

impl OwnMetrics {
    fn read(samples: &[promtext::Sample]) -> Option<Self> {
        use crate::promtext::{ESTIMATOR_CALL, Histogram};
        let work = Histogram::read(
            samples,
            "workqueue_work_duration_seconds",
            &[("name", "descheduler")],
        );
        let calls = Histogram::read(samples, ESTIMATOR_CALL, &[]);
        (work.count > 0.0).then_some(Self {
            work_sum_s: work.sum,
            work_count: work.count,
            call_sum_s: calls.sum,
            call_count: calls.count,
        })
    }
}

impl DeschedSide {
    /// Seconds from the process start until every write of the pass, binding or Event, was
    /// seen.
    pub fn all_writes_s(&self) -> Option<f64> {
        Some(self.pass_s?.max(self.last_event_s.unwrap_or(0.0)))
    }
}

/// A bare client doing a pass's work: the same list, estimator calls and writes, no rules.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeschedCeiling {
    /// Bindings in flight.
    pub concurrency: usize,
    /// Seconds from connecting to the last write (the binding patches and their Events).
    pub pass_s: f64,
    pub estimator_calls: u64,
    /// CPU seconds the kube-apiserver and etcd spent during this pass.
    #[serde(default)]
    pub control_plane_cpu_s: f64,
    /// Requests the Karmada API server served during this pass, by verb and resource.
    #[serde(default)]
    pub requests: BTreeMap<String, u64>,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeschedBench {
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
    pub bindings: usize,
    pub clusters: usize,
    pub latency_ms: f64,
    /// Bindings the formula gives replicas back for.
    pub expected_writes: usize,
    pub rust: DeschedSide,
    pub go: DeschedSide,
    /// Bindings with the same `spec.clusters` after both passes, of all.
    pub agree: usize,
    /// The fair ceiling at 16 and 64 bindings in flight.
    #[serde(default)]
    pub ceilings: Vec<DeschedCeiling>,
    /// The machine's 1-minute load average before the first pass.
    #[serde(default)]
    pub load_before: f64,
    /// CPUs of the machine, which the API server, etcd, the stub and the descheduler share.
    #[serde(default)]
    pub cpus: usize,
}

const REPLICAS: i32 = 3;
const READY: i32 = 1;
/// The reference's Event reason for a binding given replicas back.
const SUCCEED: &str = "DescheduleBindingSucceed";
/// Events per binding written: on the binding and on its workload.
const EVENTS_PER_WRITE: usize = 2;

fn binding_name(i: usize) -> String {
    format!("web-{i:05}")
}

/// `GetUnschedulableReplicas` answer of `cluster` for a workload called `name` (in any
/// namespace): 0, 1 or 2, spread by a hash of the two, so that two runs in different
/// namespaces see the same answers.
pub fn unschedulable_answer(cluster: &str, name: &str) -> i32 {
    (fnv1a(&[cluster, "/", name]) % 3) as i32
}

/// The stub estimator on a free 127.0.0.1 port: for any cluster, after `latency`,
/// `GetUnschedulableReplicas` answered by [`unschedulable_answer`], the estimates 100.
async fn start_stub(latency: Duration) -> anyhow::Result<Running> {
    FakeEstimator::from_fn(move |call| {
        let answer = match &call.unschedulable_request {
            Some(r) => {
                let name = r.resource.as_ref().map_or("", |o| o.name.as_str());
                unschedulable_answer(&call.cluster, name)
            }
            None => 100,
        };
        Behaviour::AnswerAfter(answer, latency)
    })
    .unrecorded()
    .serve()
    .await
}

/// `GetUnschedulableReplicas` calls the stub received so far.
fn unschedulable_calls(stub: &Running) -> u64 {
    stub.fake().total().unschedulable_replicas
}

/// A cluster's replicas once `unschedulable` of them are given back (the reference's rule:
/// never below the ready ones, nothing when the estimator says more than the cluster has).
fn replicas_after(unschedulable: i32) -> i32 {
    if unschedulable > 0 && REPLICAS >= unschedulable {
        (REPLICAS - unschedulable).max(READY)
    } else {
        REPLICAS
    }
}

/// The `spec.clusters` replicas the reference's rules give for binding `i`.
fn expected(i: usize, clusters: usize) -> Vec<i32> {
    (0..clusters)
        .map(|c| replicas_after(unschedulable_answer(&cluster_name(c), &binding_name(i))))
        .collect()
}

fn bindings_of(ns: &str, n: usize, clusters: usize) -> Vec<Value> {
    let targets: Vec<Value> = (0..clusters)
        .map(|c| json!({"name": cluster_name(c), "replicas": REPLICAS}))
        .collect();
    let status: Vec<Value> = (0..clusters)
        .map(|c| {
            json!({"clusterName": cluster_name(c), "applied": true,
                        "status": {"replicas": REPLICAS, "readyReplicas": READY}})
        })
        .collect();
    (0..n)
        .map(|i| {
            json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": binding_name(i), "namespace": ns,
                             "annotations": {"policy.karmada.io/applied-placement":
                                 r#"{"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}"#}},
                "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "namespace": ns, "name": binding_name(i)},
                         "replicas": REPLICAS * clusters as i32, "clusters": targets},
                "status": {"aggregatedStatus": status}
            })
        })
        .collect()
}

/// What a pass left in `ns`: `spec.clusters` replicas of every binding, and when the API
/// server stored each binding's last update by someone other than the bench.
struct Stored {
    placements: BTreeMap<String, Vec<i32>>,
    /// The `time` of each binding's newest `Update` entry in `managedFields` (the status
    /// subresource, which only the bench writes, aside). Whole seconds: the API server
    /// truncates it.
    updated: Vec<k8s_openapi::jiff::Timestamp>,
}

async fn stored(client: &Client, ns: &str) -> anyhow::Result<Stored> {
    let list = binding_api(client, Some(ns))
        .list(&ListParams::default())
        .await?;
    let updated = list
        .items
        .iter()
        .filter_map(|o| {
            o.metadata
                .managed_fields
                .iter()
                .flatten()
                .filter(|f| {
                    f.operation.as_deref() == Some("Update")
                        && f.subresource.as_deref().unwrap_or_default().is_empty()
                })
                .filter_map(|f| f.time.as_ref().map(|t| t.0))
                .max()
        })
        .collect();
    let placements = list
        .items
        .into_iter()
        .map(|o| {
            let replicas = o.data["spec"]["clusters"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| c["replicas"].as_i64().unwrap_or(0) as i32)
                        .collect()
                })
                .unwrap_or_default();
            (o.metadata.name.unwrap_or_default(), replicas)
        })
        .collect();
    Ok(Stored {
        placements,
        updated,
    })
}

/// The 10th, 50th and 90th percentiles of the write times `times` (seconds), and with `last`
/// the slowest too; empty unless every one of the `expected` writes is among them.
fn write_quantiles(times: &[f64], expected: usize, last: bool) -> Vec<f64> {
    if expected == 0 || times.len() < expected {
        return Vec::new();
    }
    let qs: &[f64] = if last {
        &[0.1, 0.5, 0.9, 1.0]
    } else {
        &[0.1, 0.5, 0.9]
    };
    qs.iter()
        .filter_map(|&q| crate::stats::percentile(times, q))
        .collect()
}

/// Deletes every binding of `ns` and waits until they are gone.
async fn delete_bindings(client: &Client, ns: &str) -> anyhow::Result<()> {
    // One by one and listing metadata only: a collection delete answers with every deleted
    // object, and 1,000 bindings of 1,000 clusters (~125 KB each) made that one response too
    // large to read back.
    let api = binding_api(client, Some(ns));
    let names: Vec<String> =
        retrying(|| async { Ok(api.list_metadata(&ListParams::default()).await?) })
            .await?
            .items
            .into_iter()
            .filter_map(|m| m.metadata.name)
            .collect();
    let jobs = names.into_iter().map(|name| async move {
        retrying(|| plane::delete_binding(client, Some(ns), &name))
            .await
            .with_context(|| format!("deleting {ns}/{name}"))
    });
    in_flight(jobs, 16).await?;
    while !retrying(|| async { Ok(api.list_metadata(&ListParams::default().limit(1)).await?) })
        .await?
        .items
        .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// CPU seconds of the control plane's kube-apiserver and etcd so far.
fn control_plane_cpu(env: &TestEnv) -> f64 {
    ["karmada-apiserver", "etcd"]
        .iter()
        .filter_map(|name| cpu_seconds(env.pid_of(name).ok()?))
        .sum()
}

/// Requests the Karmada API server has served since it started, by verb and resource
/// (`apiserver_request_total`, summed over codes and scopes): what a pass asked of it besides
/// the writes the audit log shows, reads and watches included.
async fn api_requests(client: &Client) -> anyhow::Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let samples = promtext::parse(&client.request_text(request).await?);
    Ok(promtext::sums_by(
        &samples,
        "apiserver_request_total",
        |s| {
            let key = format!("{} {}", s.label("verb"), s.label("resource"));
            Some(match s.label("subresource") {
                "" => key,
                sub => format!("{key}/{sub}"),
            })
        },
    ))
}

/// What every pass shares: the control plane, the scenario, the stub and the run's start.
struct Ctx<'a> {
    env: &'a TestEnv,
    client: Client,
    flags: &'a Scenario,
    stub: &'a Running,
    t0: Instant,
}

/// A watch of the bench, sending when it first saw each object it names.
type Watch = (tokio::task::JoinHandle<()>, UnboundedReceiver<Instant>);

/// One pass over the bindings of a namespace, measured: the bench's watches of their writes
/// and of their Events, and what the control plane and the stub had done when it began.
struct Pass {
    start: Instant,
    writes: Watch,
    events: Watch,
    control_plane: f64,
    requests: BTreeMap<String, f64>,
    calls: u64,
}

impl Pass {
    /// Creates namespace `ns` and its bindings (untimed), starts watching them, and begins.
    async fn begin(cx: &Ctx<'_>, ns: &str) -> anyhow::Result<Pass> {
        let client = &cx.client;
        apply_retrying(
            client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
        let (bindings, clusters) = (cx.flags.workload.bindings, cx.flags.workload.clusters);
        apply_all(
            client,
            bindings_of(ns, bindings, clusters),
            cx.flags.create_concurrency,
        )
        .await?;
        let list_within = cx.flags.settle_timeout;
        let writes = watch_first_seen(
            binding_api(client, Some(ns)),
            "bindings",
            list_within,
            written_key,
        );
        let writes = writes.await?;
        let events = Api::<Event>::namespaced(client.clone(), ns);
        let events = watch_first_seen(events, "Events", list_within, event_key).await?;
        Ok(Pass {
            calls: unschedulable_calls(cx.stub),
            control_plane: control_plane_cpu(cx.env),
            requests: api_requests(client).await?,
            writes,
            events,
            start: Instant::now(),
        })
    }

    /// Seconds since the pass began.
    fn secs(&self, at: Instant) -> f64 {
        at.duration_since(self.start).as_secs_f64()
    }

    /// Ends the watches; the CPU seconds of the kube-apiserver and etcd and the requests they
    /// served since the pass began.
    async fn end(&self, cx: &Ctx<'_>) -> anyhow::Result<(f64, BTreeMap<String, u64>)> {
        self.writes.0.abort();
        self.events.0.abort();
        let requests = promtext::growth(&self.requests, &api_requests(&cx.client).await?);
        Ok((
            control_plane_cpu(cx.env) - self.control_plane,
            requests.into_iter().map(|(k, n)| (k, n as u64)).collect(),
        ))
    }
}

/// The fair ceiling: a bare client does what a pass must, with `concurrency` bindings in
/// flight and nothing else: connects a channel per cluster, lists the bindings, asks every
/// cluster `GetUnschedulableReplicas` for each binding at once, PUTs the binding with its new
/// `spec.clusters` (with the resourceVersion it was listed at, as the descheduler does) and
/// creates the binding's two Events.
async fn ceiling(cx: &Ctx<'_>, concurrency: usize) -> anyhow::Result<DeschedCeiling> {
    use estimator_client::pb::EstimatorClient;
    use estimator_client::pb::messages as pb;
    use futures::StreamExt as _;
    use kube::api::PostParams;

    let ns = format!("desched-ceiling-{concurrency}");
    // The same watches of the bench as during a descheduler's pass, so that the API server
    // serves the same readers.
    let pass = Pass::begin(cx, &ns).await?;
    let channels: Vec<anyhow::Result<EstimatorClient<estimator_client::transport::Channel>>> =
        futures::stream::iter((0..cx.flags.workload.clusters).map(|_| bare_client(cx.stub.addr)))
            .buffered(32)
            .collect()
            .await;
    let channels = channels.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    let api = binding_api(&cx.client, Some(&ns));
    let events: Api<Event> = Api::namespaced(cx.client.clone(), &ns);
    let listed = api.list(&ListParams::default()).await?;
    let threshold = i64::try_from(Duration::from_secs(60).as_nanos()).unwrap_or(i64::MAX);
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(listed.items.iter().map(|rb| {
        let api = api.clone();
        let events = events.clone();
        let channels = &channels;
        let ns = &ns;
        async move {
            let name = rb.metadata.name.clone().unwrap_or_default();
            let answers = futures::future::join_all(channels.iter().enumerate().map(|(c, ch)| {
                let mut ch = ch.clone();
                let request = pb::UnschedulableReplicasRequest {
                    cluster: cluster_name(c),
                    resource: Some(pb::ObjectReference {
                        api_version: "apps/v1".into(),
                        kind: "Deployment".into(),
                        namespace: ns.clone(),
                        name: name.clone(),
                    }),
                    unschedulable_threshold: threshold,
                };
                async move {
                    ch.get_unschedulable_replicas(request)
                        .await
                        .map(|r| r.into_inner().unschedulable_replicas)
                }
            }))
            .await;
            let clusters: Vec<Value> = answers
                .into_iter()
                .enumerate()
                .map(|(c, a)| {
                    json!({"name": cluster_name(c), "replicas": replicas_after(a.unwrap_or(0))})
                })
                .collect();
            // The listed binding with its new `spec.clusters`, PUT with the resourceVersion it
            // was listed at, as the descheduler writes it.
            let mut updated = rb.clone();
            updated.data["spec"]["clusters"] = Value::Array(clusters);
            let written = api.replace(&name, &PostParams::default(), &updated).await?;
            // The two Events the reference records for it, as a pass must write them too.
            let uid = written.metadata.uid.clone().unwrap_or_default();
            let binding = ("work.karmada.io/v1alpha2", "ResourceBinding", uid.as_str());
            let pp = PostParams::default();
            futures::future::try_join(
                events.create(&pp, &ceiling_event(ns, binding, &name)),
                events.create(
                    &pp,
                    &ceiling_event(ns, ("apps/v1", "Deployment", ""), &name),
                ),
            )
            .await?;
            Ok(())
        }
    }))
    .buffer_unordered(concurrency.max(1))
    .collect()
    .await;
    let pass_s = pass.secs(Instant::now());
    let (control_plane_cpu_s, requests) = pass.end(cx).await?;
    results.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let estimator_calls = unschedulable_calls(cx.stub) - pass.calls;
    delete_bindings(&cx.client, &ns).await?;
    log!(
        cx.t0,
        "fair ceiling, {concurrency} in flight: {pass_s:.2}s, {estimator_calls} estimator calls"
    );
    Ok(DeschedCeiling {
        concurrency,
        pass_s,
        estimator_calls,
        control_plane_cpu_s,
        requests,
    })
}

/// An Event as a descheduler writes it for a binding given replicas back, about the object
/// `(apiVersion, kind, uid)` called `name`.
fn ceiling_event(ns: &str, (api_version, kind, uid): (&str, &str, &str), name: &str) -> Event {
    let involved = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(api_version.to_string()),
        kind: Some(kind.to_string()),
        namespace: Some(ns.to_string()),
        name: Some(name.to_string()),
        uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..Default::default()
    };
    normal_event(
        involved,
        &format!("{name}."),
        SUCCEED,
        "Binding has been descheduled",
        "desched-ceiling",
    )
}

/// A binding's name once some cluster of it was given replicas back.
fn written_key(obj: &DynamicObject) -> Option<String> {
    let changed = obj.data["spec"]["clusters"].as_array().is_some_and(|a| {
        a.iter()
            .any(|c| c["replicas"].as_i64() != Some(i64::from(REPLICAS)))
    });
    changed.then(|| obj.metadata.name.clone().unwrap_or_default())
}

/// An Event's name when it is the reference's for a binding given replicas back.
fn event_key(e: &Event) -> Option<String> {
    (e.reason.as_deref() == Some(SUCCEED)).then(|| e.metadata.name.clone().unwrap_or_default())
}

/// Watches `api` and sends the time each object is first seen with `key` giving it a name
/// (once per name), once the watch has listed what was there before.
async fn watch_first_seen<K>(
    api: Api<K>,
    what: &str,
    list_within: Duration,
    key: fn(&K) -> Option<String>,
) -> anyhow::Result<Watch>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let (seen_tx, seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut names = std::collections::HashSet::new();
    let first_seen = move |o: &K| {
        if let Some(name) = key(o)
            && names.insert(name)
        {
            let _ = seen_tx.send(Instant::now());
        }
    };
    let task = crate::observe::spawn_watch(api, what, list_within, first_seen).await;
    Ok((
        task.with_context(|| format!("the bench's watch of the {what}"))?,
        seen_rx,
    ))
}

/// The flags of both descheduler passes: one pass an hour (the first at start), a binding
/// unschedulable after a minute, no client rate limit in the way.
fn desched_args(env: &TestEnv, metrics_addr: &str) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", env.kubeconfig().display()),
        "--leader-elect=false".to_string(),
        "--descheduling-interval=1h".to_string(),
        "--unschedulable-threshold=1m".to_string(),
        "--kube-api-qps=5000".to_string(),
        "--kube-api-burst=10000".to_string(),
        format!("--metrics-bind-address={metrics_addr}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
    ]
}

/// Runs one descheduler over the bindings of `ns` until the `expected` writes are in; its
/// figures, and the `spec.clusters` replicas it left.
async fn side(
    cx: &Ctx<'_>,
    name: &str,
    program: &std::path::Path,
    ns: &str,
    expected: usize,
) -> anyhow::Result<(DeschedSide, BTreeMap<String, Vec<i32>>)> {
    let (env, t0) = (cx.env, cx.t0);
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let args = desched_args(env, &metrics_addr);
    // Writes are seen on a watch (not by listing every binding again and again, which would
    // load the API server the pass is measured against); Events the same way, the
    // reference's two per binding written.
    let mut pass = Pass::begin(cx, ns).await?;
    let bindings = cx.flags.workload.bindings;
    log!(
        t0,
        "{name}: {bindings} bindings in {ns}, {expected} to be written"
    );
    // Truncated to the second, as the API server's `managedFields` times are.
    let start_wall = k8s_openapi::jiff::Timestamp::now();
    let mut process = env.spawn_process(name, program, &args)?;
    let mut seen_at = Vec::with_capacity(expected);
    while pass.start.elapsed() < cx.flags.settle_timeout && seen_at.len() < expected {
        if let Ok(Some(status)) = process.try_wait() {
            anyhow::bail!("{name} exited ({status}):\n{}", process.log_tail(30));
        }
        match tokio::time::timeout(Duration::from_millis(500), pass.writes.1.recv()).await {
            Ok(Some(at)) => seen_at.push(pass.secs(at)),
            Ok(None) => anyhow::bail!("the bench's watch of the bindings ended"),
            Err(_) => {}
        }
    }
    let pass_s = seen_at
        .last()
        .copied()
        .filter(|_| seen_at.len() >= expected);
    // Events are written after the bindings they are about: wait for them as well.
    let expected_events = expected * EVENTS_PER_WRITE;
    let mut events = Vec::new();
    let events_deadline = Instant::now() + Duration::from_secs(60);
    while events.len() < expected_events && pass_s.is_some() {
        match tokio::time::timeout_at(events_deadline, pass.events.1.recv()).await {
            Ok(Some(at)) => events.push(pass.secs(at)),
            Ok(None) | Err(_) => break,
        }
    }
    let (_, hwm) = memory_kib(process.pid()).unwrap_or((0, 0));
    let cpu = cpu_seconds(process.pid()).unwrap_or(0.0);
    let (control_plane_cpu_s, requests) = pass.end(cx).await?;
    // After the pass and its figures (untimed); the Go descheduler exports no workqueue
    // histograms.
    let own = (crate::procs::scrape(&metrics_addr).await.ok()).and_then(|m| OwnMetrics::read(&m));
    // A moment for writes beyond the expected ones, then the final state.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls = unschedulable_calls(cx.stub) - pass.calls;
    let Stored {
        placements,
        updated,
    } = stored(&cx.client, ns).await?;
    let start_second = start_wall.as_second();
    let updated_s: Vec<f64> = updated
        .iter()
        .map(|t| (t.as_second() - start_second) as f64)
        .collect();
    process.kill();
    let side = DeschedSide {
        name: name.to_string(),
        pass_s,
        written: seen_at.len(),
        estimator_calls: calls,
        peak_rss_kib: hwm,
        cpu_s: cpu,
        first_write_s: seen_at.first().copied(),
        control_plane_cpu_s,
        events: events.len(),
        last_event_s: events.last().copied(),
        requests,
        write_deciles: write_quantiles(&seen_at, expected, false),
        stored_deciles: write_quantiles(&updated_s, expected, true),
        own,
    };
    log!(
        t0,
        "{name}: {}/{expected} written in {}, {}/{expected_events} events by {}, {calls} estimator calls, peak RSS {:.1} MiB",
        side.written,
        pass_s.map_or("(timeout)".to_string(), |s| format!("{s:.2}s")),
        side.events,
        side.last_event_s
            .map_or("–".to_string(), |s| format!("{s:.2}s")),
        hwm as f64 / 1024.0
    );
    Ok((side, placements))
}

/// Runs the descheduler bench.
pub async fn run(flags: &Scenario) -> anyhow::Result<DeschedBench> {
    let t0 = Instant::now();
    plane::ensure_built(&flags.bins.descheduler, "karmada-descheduler")?;
    let env = plane::start_env(t0, |b| b.members(0)).await?;
    let go_bin = env.tools().bin("karmada-descheduler");
    let client = env.client().await?;
    let stub = start_stub(LATENCY).await?;
    let port = stub.addr.port();
    let mut objects = Vec::new();
    for c in 0..flags.workload.clusters {
        let name = cluster_name(c);
        objects.push(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"}
        }));
        objects.push(serde_json::to_value(external_name_service(
            &name,
            "127.0.0.1",
            port,
        ))?);
    }
    apply_all(&client, objects, flags.create_concurrency)
        .await
        .context("creating the clusters and their estimator Services")?;
    log!(
        t0,
        "{} clusters, estimator stub on {}",
        flags.workload.clusters,
        stub.addr
    );
    let want: Vec<Vec<i32>> = (0..flags.workload.bindings)
        .map(|i| expected(i, flags.workload.clusters))
        .collect();
    let expected_writes = (want.iter())
        .filter(|r| r.iter().any(|&x| x != REPLICAS))
        .count();
    let cx = Ctx {
        env: &env,
        client,
        flags,
        stub: &stub,
        t0,
    };
    let load_before = crate::procs::load_1m();
    // The reference alone with its bindings, which are then deleted so that ours sees only
    // its own.
    let mut sides = Vec::new();
    for (name, program, ns) in [
        ("go-descheduler", &go_bin, "desched-go"),
        ("rs-descheduler", &flags.bins.descheduler, "desched-rs"),
    ] {
        sides.push(side(&cx, name, program, ns, expected_writes).await?);
        delete_bindings(&cx.client, ns).await?;
    }
    // The same answers in both namespaces: both must write the same, which is what the
    // reference's rules give.
    let agree = (want.iter().enumerate())
        .filter(|(i, w)| sides.iter().all(|s| s.1.get(&binding_name(*i)) == Some(w)))
        .count();
    let mut ceilings = Vec::new();
    for concurrency in [16, 64] {
        ceilings.push(ceiling(&cx, concurrency).await?);
    }
    env.stop();
    let [(go, _), (rust, _)] = plane::two(sides);
    Ok(DeschedBench {
        bindings: flags.workload.bindings,
        clusters: flags.workload.clusters,
        latency_ms: LATENCY.as_secs_f64() * 1000.0,
        expected_writes,
        rust,
        go,
        agree,
        ceilings,
        load_before,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_quantiles_read_the_times_in_order() {
        let times: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(
            write_quantiles(&times, 20, true),
            vec![2.0, 10.0, 18.0, 20.0]
        );
        assert_eq!(write_quantiles(&times, 20, false), vec![2.0, 10.0, 18.0]);
        // Fewer times than writes expected: no figure rather than a wrong one.
        assert!(write_quantiles(&times, 21, true).is_empty());
        assert!(write_quantiles(&[], 0, true).is_empty());
    }

    #[test]
    fn own_metrics_read_the_work_and_call_histograms() {
        let text = r#"# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="descheduler",le="+Inf"} 4
workqueue_work_duration_seconds_sum{name="descheduler"} 2.0
workqueue_work_duration_seconds_count{name="descheduler"} 4
workqueue_work_duration_seconds_sum{name="scheduler-estimator"} 9.0
workqueue_work_duration_seconds_count{name="scheduler-estimator"} 9
karmada_scheduler_estimator_client_request_duration_seconds_sum{cluster="a",method="GetUnschedulableReplicas"} 0.5
karmada_scheduler_estimator_client_request_duration_seconds_count{cluster="a",method="GetUnschedulableReplicas"} 10
karmada_scheduler_estimator_client_request_duration_seconds_sum{cluster="b",method="GetUnschedulableReplicas"} 1.5
karmada_scheduler_estimator_client_request_duration_seconds_count{cluster="b",method="GetUnschedulableReplicas"} 30
"#;
        let own =
            OwnMetrics::read(&promtext::parse(text)).expect("the descheduler's queue is there");
        assert_eq!((own.work_sum_s, own.work_count), (2.0, 4.0));
        assert_eq!((own.call_sum_s, own.call_count), (2.0, 40.0));
        // The Go descheduler exports no such queue: nothing to report.
        assert!(OwnMetrics::read(&promtext::parse("process_cpu_seconds_total 3\n")).is_none());
    }

    /// The stub answers by the formula [`expected`] is computed from, and counts the calls.
    #[tokio::test]
    async fn the_stub_answers_the_formula() {
        use estimator_client::pb::messages as pb;
        let stub = start_stub(Duration::ZERO).await.unwrap();
        let mut client = bare_client(stub.addr).await.unwrap();
        for (c, i) in [(0, 0), (1, 7), (4, 12)] {
            let request = pb::UnschedulableReplicasRequest {
                cluster: cluster_name(c),
                resource: Some(pb::ObjectReference {
                    name: binding_name(i),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let got = client
                .get_unschedulable_replicas(tonic::Request::new(request))
                .await
                .unwrap()
                .into_inner()
                .unschedulable_replicas;
            assert_eq!(
                got,
                unschedulable_answer(&cluster_name(c), &binding_name(i))
            );
        }
        assert_eq!(unschedulable_calls(&stub), 3);
    }
}
