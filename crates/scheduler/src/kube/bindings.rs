//! The scheduler's binding API through the kube client (patches and reads), every request
//! bounded by [`REQUEST_TIMEOUT`]. It exists only inside its [`WriteGate`], so every write
//! is sent under the attempt's permit, checked right before it.

use component_base::BoxFuture;
use component_base::api::bounded;
use component_base::watch::RawObject;
use component_base::write::{ObjectApi, Target, WriteGate, merge_patch};
use kube::api::{Api, ApiResource};
use serde_json::Value;

use std::sync::Arc;

use crate::cycle::sink::BindingApi;
use crate::kube::{REQUEST_TIMEOUT, resource};
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;

/// Bindings through the kube client.
pub struct KubeBindings {
    rb: ApiResource,
    crb: ApiResource,
    client: kube::Client,
}

impl KubeBindings {
    /// The API over `client`, behind the gate that is its only way out.
    pub fn gate(client: kube::Client) -> WriteGate<dyn BindingApi> {
        WriteGate::new(Arc::new(Self {
            rb: resource(BindingKind::ResourceBinding),
            crb: resource(BindingKind::ClusterResourceBinding),
            client,
        }))
    }

    /// Answers are taken as text, as the watch takes objects, and decoded by
    /// [`Binding::decode_text`]: a binding nested deeper than a JSON value holds is read and
    /// written like any other.
    fn api(&self, key: &BindingKey) -> Api<RawObject> {
        match key.kind {
            BindingKind::ResourceBinding => {
                Api::namespaced_with(self.client.clone(), key.namespace(), &self.rb)
            }
            BindingKind::ClusterResourceBinding => Api::all_with(self.client.clone(), &self.crb),
        }
    }
}

fn to_binding(kind: BindingKind, obj: RawObject) -> Result<Binding, ApiFailure> {
    Binding::decode_text(kind, obj.json()).map_err(|m| ApiFailure {
        code: 0,
        reason: String::new(),
        message: m.error.clone(),
    })
}

impl ObjectApi<BindingKey, Binding> for KubeBindings {
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move {
            // Formatted only when the request times out.
            let what = || format!("patching {}", key.describe());
            let api = self.api(key);
            let res = merge_patch(&api, key.name(), target, &patch, what, REQUEST_TIMEOUT).await;
            to_binding(key.kind, res?)
        })
    }

    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        Box::pin(async move {
            let what = || format!("reading {}", key.describe());
            to_binding(
                key.kind,
                bounded(what, REQUEST_TIMEOUT, self.api(key).get(key.name())).await?,
            )
        })
    }
}
