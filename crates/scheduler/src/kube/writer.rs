//! The [`Writer`] of binding patches and reads through the kube client, every request bounded
//! by [`REQUEST_TIMEOUT`].

use std::sync::Arc;

use futures::future::Either;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use scheduler_core::estimator::BoxFuture;
use serde_json::Value;

use component_base::fence::Permit;

use crate::cycle::sink::{Target, Writer};
use crate::kube::{REQUEST_TIMEOUT, bounded, resource};
use crate::model::binding::{Binding, BindingKey, BindingKind};
use crate::model::condition::ApiFailure;
use crate::store::workload::AssigningCache;

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

/// A [`Writer`] for one attempt: each write is sent only if the attempt's [`Permit`] still
/// holds right before it goes out (same leadership term, deadline not passed); otherwise it
/// fails with a fenced [`ApiFailure`] and nothing is sent. Reads pass.
pub struct PermittedWriter<'a> {
    pub inner: &'a dyn Writer,
    pub permit: &'a Permit,
}

impl Writer for PermittedWriter<'_> {
    fn patch<'a>(
        &'a self,
        key: &'a BindingKey,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        match self.permit.check() {
            Ok(()) => self.inner.patch(key, target, patch),
            Err(fenced) => Box::pin(std::future::ready(Err(fenced.into()))),
        }
    }

    fn get<'a>(&'a self, key: &'a BindingKey) -> BoxFuture<'a, Result<Binding, ApiFailure>> {
        self.inner.get(key)
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
            let merge = Patch::Merge(&patch);
            let request = match target {
                Target::Main => Either::Left(api.patch(&key.name, &params, &merge)),
                Target::Status => Either::Right(api.patch_status(&key.name, &params, &merge)),
            };
            let res = bounded(what, REQUEST_TIMEOUT, request).await;
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
