//! The scheduler's writes through the kube client: the [`Writer`] of binding patches and
//! reads, every request bounded in time, and the probe that releases bindings parked while
//! the API server did not answer.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use scheduler_core::estimator::BoxFuture;
use serde_json::Value;

use crate::cycle::sink::{Target, Writer};
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use crate::queue::SchedulingQueue;
use crate::store::workload::AssigningCache;
use component_base::api::api_failure;

/// Longest wait for the answer to one binding read or write. The client has no read timeout
/// (it also carries the watches), so without this a hung API server (stopped, or a response
/// lost on the way) would hold a worker forever. A write that times out may still land: it is
/// then recognised by its marker (`binding::RESULT_GENERATION_ANNOTATION`) or its 409.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `fut` bounded by `limit`; a timeout is a failure without an answer (code 0).
pub(crate) async fn bounded<T>(
    what: impl FnOnce() -> String,
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiFailure> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(api_failure),
        Err(_) => Err(ApiFailure {
            code: 0,
            reason: "Timeout".into(),
            message: format!(
                "{}: no answer from the API server within {}s",
                what(),
                limit.as_secs()
            ),
        }),
    }
}

/// How often the API server is probed while bindings wait for it.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// Longest wait for one probe's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// While bindings wait for the API server ([`Outcome::Unavailable`]), ask its `/readyz` (open
/// to every client by the default `system:public-info-viewer` role) every
/// [`PROBE_INTERVAL`]; once it answers, retry them all at once. The informer of the reference
/// plays this part there: its relist after an outage brings events that queue bindings again.
/// We do not count on events: the echo of a write that landed while the response was lost may
/// have been consumed, or may never come if nothing else changes.
pub(crate) async fn release_when_reachable(queue: Arc<SchedulingQueue>, client: kube::Client) {
    let mut tick = tokio::time::interval(PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if queue.waiting_len() == 0 {
            continue;
        }
        match probe(&client).await {
            Ok(()) => {
                let n = queue.release_waiting();
                tracing::info!(
                    "the API server answers again: retrying {n} binding(s) whose writes were interrupted"
                );
            }
            Err(e) => tracing::debug!("the API server is still unavailable: {e}"),
        }
    }
}

/// Whether the API server answers as a server does: a ready `/readyz`, or any judgement of the
/// request (a 403 from a cluster without the public-info role still shows it serving).
async fn probe(client: &kube::Client) -> Result<(), ApiFailure> {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .map_err(|e| ApiFailure {
            code: 0,
            reason: String::new(),
            message: e.to_string(),
        })?;
    match bounded(
        || "reading /readyz".into(),
        PROBE_TIMEOUT,
        client.request_text(request),
    )
    .await
    {
        Err(e) if e.is_transient() => Err(e),
        _ => Ok(()),
    }
}

/// Writes through the kube client.
pub struct KubeWriter {
    rb: ApiResource,
    crb: ApiResource,
    client: kube::Client,
    /// Told about every successful result patch (gate `WorkloadAffinity`).
    assigning: Option<Arc<AssigningCache>>,
}

impl KubeWriter {
    pub fn new(client: kube::Client, assigning: Option<Arc<AssigningCache>>) -> Self {
        Self {
            rb: resource(BindingKind::ResourceBinding),
            crb: resource(BindingKind::ClusterResourceBinding),
            client,
            assigning,
        }
    }

    fn api(&self, key: &BindingKey) -> Api<DynamicObject> {
        match key.kind {
            BindingKind::ResourceBinding => {
                Api::namespaced_with(self.client.clone(), &key.namespace, &self.rb)
            }
            BindingKind::ClusterResourceBinding => Api::all_with(self.client.clone(), &self.crb),
        }
    }
}

fn to_binding(kind: BindingKind, obj: DynamicObject) -> Result<Binding, ApiFailure> {
    let raw = serde_json::to_value(obj).map_err(|e| ApiFailure {
        code: 0,
        reason: String::new(),
        message: e.to_string(),
    })?;
    Binding::decode(kind, raw).map_err(|m| ApiFailure {
        code: 0,
        reason: String::new(),
        message: m.error.clone(),
    })
}

impl Writer for KubeWriter {
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move {
            let api = self.api(key);
            let params = PatchParams::default();
            // Formatted only when the request times out.
            let what = || format!("patching {}", key.describe());
            let res = match target {
                Target::Main => {
                    bounded(
                        what,
                        REQUEST_TIMEOUT,
                        api.patch(&key.name, &params, &Patch::Merge(&patch)),
                    )
                    .await
                }
                Target::Status => {
                    bounded(
                        what,
                        REQUEST_TIMEOUT,
                        api.patch_status(&key.name, &params, &Patch::Merge(&patch)),
                    )
                    .await
                }
            };
            let stored = to_binding(key.kind, res?)?;
            if let (Target::Main, Some(a)) = (target, &self.assigning) {
                a.written(&stored);
            }
            Ok(stored)
        })
    }

    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move {
            let what = || format!("reading {}", key.describe());
            to_binding(
                key.kind,
                bounded(what, REQUEST_TIMEOUT, self.api(key).get(&key.name)).await?,
            )
        })
    }
}

/// `ApiResource` of a binding kind.
pub fn resource(kind: BindingKind) -> ApiResource {
    ApiResource {
        group: karmada_api::work::GROUP.into(),
        version: karmada_api::work::VERSION.into(),
        api_version: karmada_api::work::API_VERSION.into(),
        kind: kind.kind().into(),
        plural: kind.plural().into(),
    }
}
