//! What the bench sees of every binding, from its own watches on ResourceBindings and
//! ClusterResourceBindings: when it was created (recorded by the bench just before the POST),
//! when its `Scheduled` condition first appeared and first became `True`, its current
//! `spec.clusters`, and how many times someone other than the bench wrote it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::fmt::Debug;

use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use testenv::fixtures::placement_in;

/// `(cluster name, replicas)` pairs of `spec.clusters`, in the order written.
pub type Placement = Vec<(String, i64)>;

/// The watched state of one binding.
#[derive(Clone, Debug, Default)]
pub struct Obs {
    /// Just before the bench's POST.
    pub created_at: Option<Instant>,
    pub scheduler: String,
    pub generation: i64,
    pub observed_generation: i64,
    /// First time a `Scheduled` condition (any status) was seen.
    pub decided_at: Option<Instant>,
    /// First time `Scheduled=True` was seen.
    pub true_at: Option<Instant>,
    /// `(status, reason)` of the current `Scheduled` condition.
    pub condition: Option<(String, String)>,
    pub message: String,
    pub clusters: Placement,
    resource_version: String,
    /// Watch events carrying a new resourceVersion after the first one (all writers).
    pub modifications: u64,
    /// Writes the bench itself made after creation (scale patches).
    pub own_writes: u64,
    /// When `status.schedulerObservedGeneration` first reached each value.
    pub generation_reached: Vec<(i64, Instant)>,
    /// `spec.replicas` as last seen.
    pub replicas: i64,
    /// `status.schedulerObservingAffinityName` as last seen.
    pub observing_affinity: Option<String>,
    /// Every distinct (replicas, affinity name, placement) seen since
    /// [`Observer::start_history`]; empty before.
    pub history: Vec<Step>,
}

/// One state of a binding in its history.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// When the bench saw it.
    pub at: Instant,
    pub replicas: i64,
    pub observing_affinity: Option<String>,
    pub clusters: Placement,
}

impl Obs {
    /// Appends the current state to the history when it differs from the last entry.
    fn record(&mut self, at: Instant) {
        let same = self.history.last().is_some_and(|l| {
            l.replicas == self.replicas
                && l.observing_affinity == self.observing_affinity
                && l.clusters == self.clusters
        });
        if !same {
            self.history.push(Step {
                at,
                replicas: self.replicas,
                observing_affinity: self.observing_affinity.clone(),
                clusters: self.clusters.clone(),
            });
        }
    }

    /// When `schedulerObservedGeneration` first reached at least `generation`.
    pub fn reached(&self, generation: i64) -> Option<Instant> {
        self.generation_reached
            .iter()
            .find(|(g, _)| *g >= generation)
            .map(|(_, t)| *t)
    }
}

/// Shared, watched state of all bindings, keyed `ns/name` (RB) or `name` (CRB).
#[derive(Clone, Default)]
pub struct Observer {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    bindings: HashMap<String, Obs>,
    /// Last time a binding owned by each scheduler was modified by someone.
    last_write: HashMap<String, Instant>,
    /// Whether histories are being recorded (off for the bulk phases: they would hold a copy
    /// of every placement).
    history: bool,
}

/// Runs a watch on `api`, calling `f` with each object added or changed as its event arrives;
/// returns once the initial list is through (within `list_within`), the task going on.
pub async fn spawn_watch<K, F>(
    api: Api<K>,
    what: &str,
    list_within: Duration,
    mut f: F,
) -> anyhow::Result<JoinHandle<()>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    F: FnMut(&K) + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let what = what.to_string();
    let task = tokio::spawn(async move {
        let mut tx = Some(tx);
        let mut stream =
            std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff());
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(Event::Apply(o) | Event::InitApply(o)) => f(&o),
                Ok(Event::InitDone) => {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(_) => {}
                Err(e) => eprintln!("bench: watch of {what} (retrying): {e}"),
            }
        }
    });
    let listed = match tokio::time::timeout(list_within, rx).await {
        Ok(Ok(())) => return Ok(task),
        Ok(Err(_)) => "ended before listing its objects".to_string(),
        Err(_) => format!("did not list its objects within {list_within:?}"),
    };
    task.abort();
    anyhow::bail!("a watch {listed}")
}

/// The API resource of a kind (its plural guessed from the kind).
pub fn resource(group: &str, version: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

fn rb_resource() -> ApiResource {
    resource("work.karmada.io", "v1alpha2", "ResourceBinding")
}

fn crb_resource() -> ApiResource {
    resource("work.karmada.io", "v1alpha2", "ClusterResourceBinding")
}

impl Observer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("observer lock")
    }

    /// Starts the two watches; returns once both have listed.
    pub async fn start(client: &Client) -> anyhow::Result<Observer> {
        let obs = Observer::default();
        for (ar, namespaced) in [(rb_resource(), true), (crb_resource(), false)] {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
            let o = obs.clone();
            let apply = move |obj: &DynamicObject| o.apply(obj, namespaced);
            let task = spawn_watch(api, &ar.plural, Duration::from_secs(60), apply).await?;
            obs.lock().tasks.push(task);
        }
        Ok(obs)
    }

    /// Stops the watches (before the control plane goes away).
    pub fn stop(&self) {
        for t in self.lock().tasks.drain(..) {
            t.abort();
        }
    }

    fn apply(&self, obj: &DynamicObject, namespaced: bool) {
        let now = Instant::now();
        let name = obj.metadata.name.clone().unwrap_or_default();
        let key = match (&obj.metadata.namespace, namespaced) {
            (Some(ns), true) => format!("{ns}/{name}"),
            _ => name,
        };
        let d = &obj.data;
        let rv = obj.metadata.resource_version.clone().unwrap_or_default();
        let scheduler = d
            .pointer("/spec/schedulerName")
            .and_then(Value::as_str)
            .unwrap_or("default-scheduler")
            .to_string();
        let observed = d
            .pointer("/status/schedulerObservedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let cond = d
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Scheduled"))
            .map(|c| {
                (
                    c["status"].as_str().unwrap_or_default().to_string(),
                    c["reason"].as_str().unwrap_or_default().to_string(),
                    c["message"].as_str().unwrap_or_default().to_string(),
                )
            });
        let clusters = placement_of(d);
        let replicas = d
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let affinity = d
            .pointer("/status/schedulerObservingAffinityName")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut inner = self.lock();
        let history = inner.history;
        let e = inner.bindings.entry(key).or_default();
        if !e.resource_version.is_empty() && e.resource_version != rv {
            e.modifications += 1;
        }
        let changed = e.resource_version != rv;
        e.resource_version = rv;
        e.scheduler = scheduler.clone();
        e.generation = obj.metadata.generation.unwrap_or(0);
        if observed > e.observed_generation {
            e.generation_reached.push((observed, now));
        }
        e.observed_generation = observed;
        if let Some((status, reason, message)) = cond {
            e.decided_at.get_or_insert(now);
            if status == "True" {
                e.true_at.get_or_insert(now);
            }
            e.condition = Some((status, reason));
            e.message = message;
        }
        e.clusters = clusters;
        e.replicas = replicas;
        e.observing_affinity = affinity;
        if history {
            e.record(now);
        }
        if changed {
            inner.last_write.insert(scheduler, now);
        }
    }

    /// From now on, keeps every binding's history (starting with its current state).
    pub fn start_history(&self) {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.history = true;
        for o in inner.bindings.values_mut() {
            o.record(now);
        }
    }

    /// Records the creation instant of `key` (call just before the POST).
    pub fn created(&self, key: &str, scheduler: &str) {
        let mut inner = self.lock();
        let e = inner.bindings.entry(key.to_string()).or_default();
        e.created_at = Some(Instant::now());
        e.scheduler = scheduler.to_string();
    }

    /// Counts a write the bench made to `key` after creation.
    pub fn own_write(&self, key: &str) {
        let mut inner = self.lock();
        inner
            .bindings
            .entry(key.to_string())
            .or_default()
            .own_writes += 1;
    }

    /// Drops what is known of `key` (a deleted binding, in runs that create without end).
    pub fn forget(&self, key: &str) {
        self.lock().bindings.remove(key);
    }

    /// A copy of one binding's state.
    pub fn get(&self, key: &str) -> Option<Obs> {
        self.lock().bindings.get(key).cloned()
    }

    /// Copies of several bindings' states (absent keys give a default entry).
    pub fn snapshot(&self, keys: &[String]) -> Vec<Obs> {
        let inner = self.lock();
        keys.iter()
            .map(|k| inner.bindings.get(k).cloned().unwrap_or_default())
            .collect()
    }

    /// Last write by anyone to a binding owned by `scheduler`.
    pub fn last_write(&self, scheduler: &str) -> Option<Instant> {
        self.lock().last_write.get(scheduler).copied()
    }

    /// Waits until `done` holds for every key, then until the bindings of `schedulers` have
    /// been quiet (no write) for `quiet`; gives up after `timeout`. Returns whether every key
    /// was done.
    pub async fn settle(
        &self,
        keys: &[String],
        schedulers: &[&str],
        done: impl Fn(&Obs) -> bool,
        quiet: Duration,
        timeout: Duration,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        let mut all_done = false;
        loop {
            let now = Instant::now();
            if !all_done {
                let inner = self.lock();
                all_done = keys
                    .iter()
                    .all(|k| inner.bindings.get(k).is_some_and(&done));
            }
            if all_done {
                let last = schedulers.iter().filter_map(|s| self.last_write(s)).max();
                if last.is_none_or(|t| now.duration_since(t) >= quiet) {
                    return true;
                }
            }
            if now > deadline {
                return all_done;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The ResourceBindings of `ns`, or the ClusterResourceBindings when `ns` is `None`.
pub fn binding_api(client: &Client, ns: Option<&str>) -> Api<DynamicObject> {
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &rb_resource()),
        None => Api::all_with(client.clone(), &crb_resource()),
    }
}

/// `spec.clusters` of a binding as `(name, replicas)` pairs.
pub fn placement_of(d: &Value) -> Placement {
    d.pointer("/spec/clusters")
        .map(placement_in)
        .unwrap_or_default()
}
