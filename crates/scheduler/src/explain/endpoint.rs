//! The daemon's `/debug/explain` endpoint (`--enable-explain-endpoint`): [`explain_binding`]
//! on the live cache, served at `/debug/explain/<namespace>/<name>` and `/debug/explain/<name>`.

use std::sync::Arc;

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::controller::{Context, ExplainSlot};
use crate::explain::ReadOnly;
use crate::model::binding::BindingKey;
use crate::store::Cached;

/// What the daemon would decide for the cached binding `key` now, and why (see
/// [`ReadOnly`]): its cycle on a copy, with the daemon's group index and a copy of its
/// assumptions, nothing written.
pub async fn explain_binding(ctx: &Context, key: &BindingKey) -> Option<Value> {
    let Some(Cached::Ok(b)) = ctx.stores.binding(key) else {
        return None;
    };
    let snapshot = ctx.stores.snapshot();
    let run = ReadOnly::new(&ctx.scheduler, &ctx.scheduler_name, true).with_daemon(
        ctx.workload
            .as_deref()
            .map(|w| w as &dyn scheduler_core::framework::WorkloadGroupIndex),
        ctx.assumptions.as_deref(),
    );
    let binding = run.store.insert(b.kind, b.to_json()).ok()?;
    let e = run
        .explain(&binding, &snapshot, Time(Timestamp::now()))
        .await;
    Some(e.to_json(&binding))
}

async fn answer(slot: Arc<ExplainSlot>, key: BindingKey) -> Response {
    let Some(ctx) = slot.get() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "not scheduling yet (a standby, or the caches are not synced)\n",
        )
            .into_response();
    };
    match explain_binding(ctx, &key).await {
        Some(v) => (
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n",
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            format!(
                "{} is not in the cache (or does not decode)\n",
                key.describe()
            ),
        )
            .into_response(),
    }
}

/// `/debug/explain/<namespace>/<name>` and `/debug/explain/<name>`.
pub fn explain_routes(slot: Arc<ExplainSlot>) -> Router {
    let (a, b) = (slot.clone(), slot);
    Router::new()
        .route(
            "/debug/explain/{namespace}/{name}",
            get(move |Path((ns, name)): Path<(String, String)>| {
                answer(a.clone(), BindingKey::rb(&ns, &name))
            }),
        )
        .route(
            "/debug/explain/{name}",
            get(move |Path(name): Path<String>| answer(b.clone(), BindingKey::crb(&name))),
        )
}
