//! The load and the stopwatch of the end-to-end bench in a whole Karmada: N Deployments, each
//! with its own PropagationPolicy (the strategies in turn), created on the Karmada API server
//! of a [`WholeKarmada`] while the bench's watches note when each step of the user's path is
//! first seen (binding, placement, `Scheduled=True`, Works, the members' Deployments): the
//! bench's monotonic times, with the servers' one-second stamps beside them as a cross-check.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use testenv::whole::WholeKarmada;

use crate::observe::{binding_api, resource, spawn_watch};

/// Where the bench's objects live, on Karmada and (propagated) on the members.
pub const NAMESPACE: &str = "whole-bench";

/// The members of `hack/karmada-up.sh`.
pub const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

/// Karmada names a Deployment's ResourceBinding `<name>-deployment`.
const BINDING_SUFFIX: &str = "-deployment";

/// How a Deployment's policy places it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// Divided, weighted by the estimators' available replicas.
    DynamicWeight,
    /// Divided by static weights 2:1:1.
    StaticWeight,
    /// Duplicated on every member.
    Duplicated,
}

/// One Deployment of the load.
#[derive(Clone, Debug)]
pub struct Item {
    pub name: String,
    pub strategy: Strategy,
    pub replicas: i64,
}

/// `n` Deployments, the strategies in turn. Replicas are few (3, 4 and 1 a member) so that
/// the members' pods (about 3.3 a Deployment) stay a small part of the machine's work.
pub fn mix(n: usize) -> Vec<Item> {
    (0..n)
        .map(|i| {
            let (strategy, replicas) = match i % 3 {
                0 => (Strategy::DynamicWeight, 3),
                1 => (Strategy::StaticWeight, 4),
                _ => (Strategy::Duplicated, 1),
            };
            Item {
                name: format!("wb-{i:04}"),
                strategy,
                replicas,
            }
        })
        .collect()
}

/// The Deployment of `item`: pause pods asking 10m CPU and 32Mi each, so that even member1
/// (12 CPUs, 330 pod slots) holds its share of a few hundred Deployments and no pod stays
/// Pending (which would set the descheduler to work).
pub fn deployment(item: &Item) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": item.name, "namespace": NAMESPACE, "labels": {"app": item.name}},
        "spec": {
            "replicas": item.replicas,
            "selector": {"matchLabels": {"app": item.name}},
            "template": {
                "metadata": {"labels": {"app": item.name}},
                "spec": {"containers": [{
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}
                }]}
            }
        }
    })
}

/// The PropagationPolicy of `item`, selecting its Deployment by name.
pub fn policy(item: &Item) -> Value {
    let scheduling = match item.strategy {
        Strategy::DynamicWeight => json!({
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"}
        }),
        Strategy::StaticWeight => json!({
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": MEMBERS.iter().enumerate().map(|(i, m)| json!({
                "targetCluster": {"clusterNames": [m]},
                "weight": if i == 0 { 2 } else { 1 }
            })).collect::<Vec<_>>()}
        }),
        Strategy::Duplicated => json!({"replicaSchedulingType": "Duplicated"}),
    };
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": item.name, "namespace": NAMESPACE},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": item.name}],
            "placement": {
                "clusterAffinity": {"clusterNames": MEMBERS},
                "replicaScheduling": scheduling
            }
        }
    })
}

fn policies(client: &Client) -> Api<DynamicObject> {
    let ar = resource("policy.karmada.io", "v1alpha1", "PropagationPolicy");
    Api::namespaced_with(client.clone(), NAMESPACE, &ar)
}

fn works(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &resource("work.karmada.io", "v1alpha1", "Work"),
    )
}

/// The Deployment a Work was made for, when it is one of the bench's (by the binding
/// annotations the binding controller puts on Works), and its cluster (`karmada-es-<name>`).
fn work_target(w: &DynamicObject) -> Option<(String, String)> {
    let ann = w.metadata.annotations.as_ref()?;
    if ann.get("resourcebinding.karmada.io/namespace")? != NAMESPACE {
        return None;
    }
    let name = ann
        .get("resourcebinding.karmada.io/name")?
        .strip_suffix(BINDING_SUFFIX)?;
    let cluster = w
        .metadata
        .namespace
        .as_deref()?
        .strip_prefix("karmada-es-")?;
    Some((name.to_string(), cluster.to_string()))
}

/// Parses an RFC 3339 stamp as the API server writes it.
fn stamp(s: Option<&str>) -> Option<SystemTime> {
    s?.parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(SystemTime::from)
}

/// What the watches saw of one binding.
#[derive(Clone, Debug, Default)]
struct BindingSeen {
    seen: Option<Instant>,
    created: Option<SystemTime>,
    placed: Option<Instant>,
    scheduled: Option<Instant>,
    scheduled_ltt: Option<SystemTime>,
    placement: Vec<(String, i64)>,
    /// Watch events (one per write by anyone, the creation included).
    events: u64,
}

/// Everything the watches saw, by Deployment name.
#[derive(Default)]
struct Seen {
    bindings: HashMap<String, BindingSeen>,
    /// First sight of the Work for (Deployment, cluster).
    works: HashMap<(String, String), Instant>,
    /// (Deployment, member) → each `spec.replicas` value with the first time it was seen; the
    /// last entry is the current value.
    members: HashMap<(String, String), Vec<(i64, Instant)>>,
}

impl Seen {
    fn binding(&mut self, rb: &DynamicObject, at: Instant) {
        let Some(name) = rb
            .metadata
            .name
            .as_deref()
            .and_then(|n| n.strip_suffix(BINDING_SUFFIX))
        else {
            return;
        };
        let b = self.bindings.entry(name.to_string()).or_default();
        b.seen.get_or_insert(at);
        b.events += 1;
        if b.created.is_none() {
            b.created = rb.metadata.creation_timestamp.as_ref().map(|t| t.0.into());
        }
        b.placement = testenv::fixtures::placement_in(&rb.data["spec"]["clusters"]);
        if !b.placement.is_empty() {
            b.placed.get_or_insert(at);
        }
        let scheduled = rb.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Scheduled" && c["status"] == "True");
        if let Some(c) = scheduled
            && b.scheduled.is_none()
        {
            b.scheduled = Some(at);
            b.scheduled_ltt = stamp(c["lastTransitionTime"].as_str());
        }
    }

    fn member(&mut self, member: &str, d: &Deployment, at: Instant) {
        let (Some(name), Some(replicas)) = (
            d.metadata.name.clone(),
            d.spec.as_ref().and_then(|s| s.replicas),
        ) else {
            return;
        };
        let seen = self.members.entry((name, member.to_string())).or_default();
        if seen.last().map(|(r, _)| *r) != Some(i64::from(replicas)) {
            seen.push((i64::from(replicas), at));
        }
    }

    /// When every member the binding names first held the Deployment with the replicas the
    /// binding gives it now; `None` while one does not hold them now.
    fn on_members(&self, name: &str) -> Option<Instant> {
        let b = self.bindings.get(name)?;
        b.scheduled?;
        if b.placement.is_empty() {
            return None;
        }
        let mut last = None;
        for (cluster, want) in &b.placement {
            let seen = self.members.get(&(name.to_string(), cluster.clone()))?;
            if seen.last().map(|(r, _)| *r) != Some(*want) {
                return None;
            }
            let first = seen.iter().find(|(r, _)| r == want)?.1;
            last = last.max(Some(first));
        }
        last
    }

    /// When the Works for every cluster the binding names were all seen.
    fn works_done(&self, name: &str) -> Option<Instant> {
        let b = self.bindings.get(name)?;
        let mut last = None;
        for (cluster, _) in &b.placement {
            let at = *self.works.get(&(name.to_string(), cluster.clone()))?;
            last = last.max(Some(at));
        }
        last
    }
}

/// One Deployment's way through Karmada, in seconds since the round's first creation (the
/// bench's clock), and by the servers' one-second stamps.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    pub name: String,
    pub strategy: Option<Strategy>,
    pub replicas: i64,
    /// The binding's `spec.clusters` at the end.
    pub placement: Vec<(String, i64)>,
    /// Just before the Deployment's POST (its policy was created just before).
    pub applied: f64,
    /// ResourceBinding first seen.
    pub binding: Option<f64>,
    /// `spec.clusters` first seen set.
    pub placed: Option<f64>,
    /// `Scheduled=True` first seen.
    pub scheduled: Option<f64>,
    /// Works for every target cluster seen.
    pub works: Option<f64>,
    /// Every target member seen holding the Deployment with its replicas.
    pub on_members: Option<f64>,
    /// Versions of the binding the watch saw (its creation and every write after it, by the
    /// controller-manager and the scheduler), up to the end of the round.
    pub binding_versions: u64,
    /// The wall clock at `applied`, in seconds since the Unix epoch.
    pub applied_unix: f64,
    /// The binding's `creationTimestamp` (whole seconds since the epoch).
    pub binding_created_unix: Option<f64>,
    /// The Scheduled condition's `lastTransitionTime` (whole seconds since the epoch).
    pub scheduled_unix: Option<f64>,
}

impl Sample {
    /// Seconds from the creation to a server stamp, with the creation's wall time cut to
    /// whole seconds as the server cuts its own (so within a second of the truth).
    pub fn by_server(&self, stamp: Option<f64>) -> Option<f64> {
        Some(stamp? - self.applied_unix.floor())
    }
}

/// One round: the samples and when the round ran.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Round {
    /// `ours` or `go`.
    pub scheduler: String,
    pub deployments: usize,
    /// Deployments/s asked for (0: as fast as `concurrency` allows).
    pub rate: f64,
    pub concurrency: usize,
    /// From the first creation to the last Deployment on its members (or to the timeout).
    pub seconds: f64,
    /// From the first creation to the last.
    pub apply_seconds: f64,
    /// Deployments on all their members in time.
    pub complete: usize,
    pub samples: Vec<Sample>,
}

/// Watches the bench's objects on Karmada and on every member until dropped.
pub struct Recorder {
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Recorder {
    /// Starts the watches and waits until each has listed what exists.
    pub async fn start(k: &WholeKarmada) -> anyhow::Result<Recorder> {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let karmada = k.client(None).await?;
        let minute = Duration::from_secs(60);
        let s = seen.clone();
        let binding = move |o: &_| s.lock().unwrap().binding(o, Instant::now());
        let mut tasks = vec![
            spawn_watch(
                binding_api(&karmada, Some(NAMESPACE)),
                "ResourceBindings",
                minute,
                binding,
            )
            .await?,
        ];
        let s = seen.clone();
        let work = move |o: &_| {
            if let Some(key) = work_target(o) {
                s.lock().unwrap().works.entry(key).or_insert(Instant::now());
            }
        };
        tasks.push(spawn_watch(works(&karmada), "Works", minute, work).await?);
        for m in MEMBERS {
            let api: Api<Deployment> = Api::namespaced(k.client(Some(m)).await?, NAMESPACE);
            let s = seen.clone();
            let member = move |o: &_| s.lock().unwrap().member(m, o, Instant::now());
            let what = format!("{m}'s Deployments");
            tasks.push(spawn_watch(api, &what, minute, member).await?);
        }
        Ok(Recorder { seen, tasks })
    }

    /// How many of `names` are on all their members now.
    fn complete(&self, names: &[&str]) -> usize {
        let seen = self.seen.lock().unwrap();
        names
            .iter()
            .filter(|n| seen.on_members(n).is_some())
            .count()
    }
}

/// Creates the namespace on Karmada (Karmada propagates it to every member) and waits until
/// every member has it.
pub async fn ensure_namespace(k: &WholeKarmada) -> anyhow::Result<()> {
    let karmada: Api<Namespace> = Api::all(k.client(None).await?);
    if karmada.get_opt(NAMESPACE).await?.is_none() {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
        karmada.create(&PostParams::default(), &ns).await?;
    }
    for m in MEMBERS {
        let api: Api<Namespace> = Api::all(k.client(Some(m)).await?);
        testenv::wait_for(
            &format!("namespace {NAMESPACE} on {m}"),
            Duration::from_secs(120),
            || {
                let api = api.clone();
                async move { Ok(api.get_opt(NAMESPACE).await?.map(|_| ())) }
            },
        )
        .await?;
    }
    Ok(())
}

/// Deletes the bench's Deployments and policies on Karmada and waits until they, their
/// bindings, Works, member Deployments and pods are gone, so that a round starts on a quiet
/// Karmada.
pub async fn clear(k: &WholeKarmada, timeout: Duration) -> anyhow::Result<()> {
    let karmada = k.client(None).await?;
    let deployments: Api<Deployment> = Api::namespaced(karmada.clone(), NAMESPACE);
    let lp = ListParams::default();
    deployments
        .delete_collection(&DeleteParams::background(), &lp)
        .await?;
    policies(&karmada)
        .delete_collection(&DeleteParams::background(), &lp)
        .await?;
    let mut members = Vec::new();
    for m in MEMBERS {
        members.push((m, k.client(Some(m)).await?));
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let mut left = BTreeMap::new();
        // Policies keep a finalizer for a while; a new round's creation would find them.
        left.insert("policies", policies(&karmada).list(&lp).await?.items.len());
        left.insert("deployments", deployments.list(&lp).await?.items.len());
        left.insert(
            "bindings",
            binding_api(&karmada, Some(NAMESPACE))
                .list(&lp)
                .await?
                .items
                .len(),
        );
        let w = works(&karmada).list(&lp).await?;
        left.insert(
            "works",
            w.items.iter().filter(|w| work_target(w).is_some()).count(),
        );
        let mut on_members = 0;
        for (_, c) in &members {
            let d: Api<Deployment> = Api::namespaced(c.clone(), NAMESPACE);
            let p: Api<Pod> = Api::namespaced(c.clone(), NAMESPACE);
            on_members += d.list(&lp).await?.items.len() + p.list(&lp).await?.items.len();
        }
        left.insert("member deployments and pods", on_members);
        if left.values().all(|n| *n == 0) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("after {timeout:?} of clearing, still left: {left:?}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Creates `items` (each policy, then its Deployment) at `rate` a second (0: at once), with at
/// most `concurrency` in flight, and waits until each is on all its members or `timeout`
/// passes. The namespace must exist (see [`ensure_namespace`]) and hold none of them.
pub async fn run_round(
    k: &WholeKarmada,
    scheduler: &str,
    items: &[Item],
    rate: f64,
    concurrency: usize,
    timeout: Duration,
) -> anyhow::Result<Round> {
    let recorder = Recorder::start(k).await?;
    let karmada = k.client(None).await?;
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        karmada.clone(),
        NAMESPACE,
        &ApiResource::erase::<Deployment>(&()),
    );
    let pols = policies(&karmada);
    let t0 = Instant::now();
    let slots = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut creations = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if rate > 0.0 {
            let due = t0 + Duration::from_secs_f64(i as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        }
        let permit = slots.clone().acquire_owned().await?;
        let (deployments, pols, item) = (deployments.clone(), pols.clone(), item.clone());
        creations.push(tokio::spawn(async move {
            let _permit = permit;
            let pp = PostParams::default();
            let pol: DynamicObject = serde_json::from_value(policy(&item))?;
            pols.create(&pp, &pol)
                .await
                .with_context(|| format!("creating policy {}", item.name))?;
            let d: DynamicObject = serde_json::from_value(deployment(&item))?;
            let at = (Instant::now(), SystemTime::now());
            deployments
                .create(&pp, &d)
                .await
                .with_context(|| format!("creating Deployment {}", item.name))?;
            anyhow::Ok((item.name, at))
        }));
    }
    let mut applied = HashMap::new();
    for c in creations {
        let (name, at) = c.await??;
        applied.insert(name, at);
    }
    let apply_seconds = applied
        .values()
        .map(|(at, _)| at.duration_since(t0).as_secs_f64())
        .fold(0.0, f64::max);
    let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
    let deadline = t0 + timeout;
    let mut complete = recorder.complete(&names);
    while complete < names.len() && Instant::now() < deadline {
        // The state is in memory (the watches fill it); checking it costs nothing.
        tokio::time::sleep(Duration::from_millis(200)).await;
        complete = recorder.complete(&names);
    }
    let seen = recorder.seen.lock().unwrap();
    let since = |at: Instant| at.duration_since(t0).as_secs_f64();
    let unix = |wall: SystemTime| {
        wall.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    };
    let mut samples = Vec::new();
    let mut last = 0.0f64;
    for item in items {
        let (at, wall) = applied[&item.name];
        let b = seen.bindings.get(&item.name).cloned().unwrap_or_default();
        let on_members = seen.on_members(&item.name).map(since);
        last = last.max(on_members.unwrap_or(timeout.as_secs_f64()));
        samples.push(Sample {
            name: item.name.clone(),
            strategy: Some(item.strategy),
            replicas: item.replicas,
            placement: b.placement.clone(),
            applied: since(at),
            binding: b.seen.map(since),
            placed: b.placed.map(since),
            scheduled: b.scheduled.map(since),
            works: seen.works_done(&item.name).map(since),
            on_members,
            binding_versions: b.events,
            applied_unix: unix(wall),
            binding_created_unix: b.created.map(unix),
            scheduled_unix: b.scheduled_ltt.map(unix),
        });
    }
    Ok(Round {
        scheduler: scheduler.to_string(),
        deployments: items.len(),
        rate,
        concurrency,
        seconds: last,
        apply_seconds,
        complete,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_takes_each_strategy_in_turn() {
        let m = mix(7);
        let kinds: Vec<Strategy> = m.iter().map(|i| i.strategy).collect();
        assert_eq!(
            kinds,
            [
                Strategy::DynamicWeight,
                Strategy::StaticWeight,
                Strategy::Duplicated,
                Strategy::DynamicWeight,
                Strategy::StaticWeight,
                Strategy::Duplicated,
                Strategy::DynamicWeight
            ]
        );
        assert_eq!(
            policy(&m[1])["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
                [0]["weight"],
            2
        );
        assert_eq!(deployment(&m[2])["spec"]["replicas"], 1);
    }

    #[test]
    fn on_members_needs_every_target_at_the_binding_replicas() {
        let t = Instant::now();
        let ms = |n: u64| t + Duration::from_millis(n);
        let mut s = Seen::default();
        s.bindings.insert(
            "a".into(),
            BindingSeen {
                seen: Some(ms(1)),
                placed: Some(ms(2)),
                scheduled: Some(ms(3)),
                placement: vec![("member1".into(), 2), ("member2".into(), 1)],
                ..Default::default()
            },
        );
        assert_eq!(s.on_members("a"), None);
        s.members
            .insert(("a".into(), "member1".into()), vec![(2, ms(10))]);
        assert_eq!(s.on_members("a"), None, "member2 holds nothing yet");
        s.members
            .insert(("a".into(), "member2".into()), vec![(3, ms(11))]);
        assert_eq!(s.on_members("a"), None, "member2 holds 3, not 1");
        s.members
            .get_mut(&("a".into(), "member2".into()))
            .unwrap()
            .push((1, ms(20)));
        assert_eq!(s.on_members("a"), Some(ms(20)));
        assert_eq!(s.works_done("a"), None);
        s.works.insert(("a".into(), "member1".into()), ms(5));
        s.works.insert(("a".into(), "member2".into()), ms(7));
        assert_eq!(s.works_done("a"), Some(ms(7)));
    }
}
