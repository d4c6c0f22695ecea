//! The scheduler's [`ObjectWriter`] of binding patches and reads through the kube client, every
//! request bounded by [`REQUEST_TIMEOUT`]. Its writes are fenced by component-base's
//! [`Permitted`](component_base::write::Permitted) wrapper, per attempt.

use component_base::BoxFuture;
use component_base::api::bounded;
use component_base::write::{ObjectWriter, Target, merge_patch};
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

use crate::kube::{REQUEST_TIMEOUT, resource};
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;

/// Writes through the kube client.
pub struct KubeWriter {
    rb: ApiResource,
    crb: ApiResource,
    client: kube::Client,
}

impl KubeWriter {
    pub fn new(client: kube::Client) -> Self {
        Self {
            rb: resource(BindingKind::ResourceBinding),
            crb: resource(BindingKind::ClusterResourceBinding),
            client,
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
    Binding::decode(kind, &raw).map_err(|m| ApiFailure {
        code: 0,
        reason: String::new(),
        message: m.error.clone(),
    })
}

impl ObjectWriter<BindingKey, Binding> for KubeWriter {
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
            let res = merge_patch(&api, &key.name, target, &patch, what, REQUEST_TIMEOUT).await;
            to_binding(key.kind, res?)
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
