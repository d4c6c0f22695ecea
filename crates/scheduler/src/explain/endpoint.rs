//! The daemon's `/debug/explain` endpoint (`--enable-explain-endpoint`): [`explain_binding`]
//! on the live cache, served at `/debug/explain/<namespace>/<name>` and `/debug/explain/<name>`
//! to callers the Karmada API server vouches for ([`crate::explain::guard`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Path};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::controller::{Context, ExplainSlot};
use crate::explain::ReadOnly;
use crate::explain::budget::Source;
use crate::explain::guard::{CheckError, Guard, Verdict};
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

/// Explanations computed at once, at most (each runs a cycle with its estimator calls).
pub const MAX_IN_FLIGHT: usize = 4;

/// What the routes share: the running scheduler, the callers' checks, the in-flight bound.
struct Endpoint {
    slot: Arc<ExplainSlot>,
    guard: Guard,
    in_flight: Arc<Semaphore>,
    /// When a failed review was last logged (once a minute at most).
    logged: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Endpoint {
    /// Say once a minute at most that reviews fail: the daemon may lack the RBAC for them.
    fn log_failure(&self, e: &CheckError) {
        let mut last = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60)) {
            *last = Some(tokio::time::Instant::now());
            tracing::warn!(
                "/debug/explain: {e} (the daemon needs create on tokenreviews and subjectaccessreviews)"
            );
        }
    }
}

fn plain(code: StatusCode, text: String) -> Response {
    (code, text + "\n").into_response()
}

/// The bearer token of `Authorization`, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthorized(why: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        format!("Unauthorized: {why}\n"),
    )
        .into_response()
}

/// A slot for the explanation of `key`, once the holder of `token` is known and allowed to
/// `get` it; else the answer refusing the caller. Callers not yet known never hold a slot.
async fn admit(
    ep: &Endpoint,
    client: &kube::Client,
    token: &str,
    source: Source,
    key: &BindingKey,
) -> Result<OwnedSemaphorePermit, Response> {
    match ep.guard.check(client, token, source, key).await {
        Ok(Verdict::Allowed) => {}
        Ok(Verdict::Unauthenticated(why)) => return Err(unauthorized(&why)),
        Ok(Verdict::Forbidden(why)) => return Err(plain(StatusCode::FORBIDDEN, why)),
        Err(e @ CheckError::TooMany) => {
            return Err(plain(StatusCode::TOO_MANY_REQUESTS, e.to_string()));
        }
        Err(e) => {
            ep.log_failure(&e);
            return Err(plain(StatusCode::SERVICE_UNAVAILABLE, e.to_string()));
        }
    }
    ep.in_flight.clone().try_acquire_owned().map_err(|_| {
        plain(
            StatusCode::TOO_MANY_REQUESTS,
            format!("{MAX_IN_FLIGHT} explanations are already being computed; try again shortly"),
        )
    })
}

async fn answer(
    ep: Arc<Endpoint>,
    headers: HeaderMap,
    peer: Option<SocketAddr>,
    key: BindingKey,
) -> Response {
    let Some(token) = bearer(&headers) else {
        return unauthorized("a bearer token is required");
    };
    let Some((ctx, client, runtime)) = ep.slot.get() else {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "not scheduling yet (a standby, or the caches are not synced)".into(),
        );
    };
    let _permit = match admit(&ep, client, token, Source::of(peer), &key).await {
        Ok(permit) => permit,
        Err(refused) => return refused,
    };
    let (ctx, k) = (ctx.clone(), key.clone());
    let explained = runtime
        .spawn(async move { explain_binding(&ctx, &k).await })
        .await;
    match explained {
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("explaining {} failed: {e}", key.describe()),
        ),
        Ok(Some(v)) => (
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n",
        )
            .into_response(),
        Ok(None) => plain(
            StatusCode::NOT_FOUND,
            format!(
                "{} is not in the cache (or does not decode)",
                key.describe()
            ),
        ),
    }
}

/// `/debug/explain/<namespace>/<name>` and `/debug/explain/<name>`, for callers whose bearer
/// token the Karmada API server accepts and who may `get` the binding ([`Guard`]); at most
/// [`MAX_IN_FLIGHT`] at once (429 beyond), counting only callers known and allowed.
pub fn explain_routes(slot: Arc<ExplainSlot>) -> Router {
    routes(Arc::new(Endpoint {
        slot,
        guard: Guard::default(),
        in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        logged: Default::default(),
    }))
}

/// The peer's address, which the server puts in each request (component-base's `serve`).
type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

fn routes(ep: Arc<Endpoint>) -> Router {
    let a = ep.clone();
    Router::new()
        .route(
            "/debug/explain/{namespace}/{name}",
            get(
                move |peer: Peer, headers: HeaderMap, Path((ns, name)): Path<(String, String)>| {
                    let peer = peer.map(|Extension(ConnectInfo(p))| p);
                    answer(a.clone(), headers, peer, BindingKey::rb(&ns, &name))
                },
            ),
        )
        .route(
            "/debug/explain/{name}",
            get(
                move |peer: Peer, headers: HeaderMap, Path(name): Path<String>| {
                    let peer = peer.map(|Extension(ConnectInfo(p))| p);
                    answer(ep.clone(), headers, peer, BindingKey::crb(&name))
                },
            ),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::Request;
    use tower::ServiceExt as _;

    async fn status(ep: &Arc<Endpoint>, path: &str, token: Option<&str>) -> StatusCode {
        let mut req = Request::get(path);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        routes(ep.clone())
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap()
            .status()
    }

    fn endpoint(permits: usize) -> Arc<Endpoint> {
        Arc::new(Endpoint {
            slot: Arc::new(ExplainSlot::new()),
            guard: Guard::default(),
            in_flight: Arc::new(Semaphore::new(permits)),
            logged: Default::default(),
        })
    }

    #[tokio::test]
    async fn anonymous_callers_are_refused_before_anything_else() {
        let ep = endpoint(0);
        for path in ["/debug/explain/ns/rb", "/debug/explain/crb"] {
            assert_eq!(status(&ep, path, None).await, StatusCode::UNAUTHORIZED);
            assert_eq!(status(&ep, path, Some("")).await, StatusCode::UNAUTHORIZED);
        }
        let mut req = Request::get("/debug/explain/ns/rb");
        req = req.header(header::AUTHORIZATION, "Basic dXNlcjpwYXNz");
        let resp = routes(ep)
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(resp.headers()[header::WWW_AUTHENTICATE], "Bearer");
    }

    /// The bound counts only callers known and allowed: the slot is taken after the checks
    /// (before them, a standby can only say so), and a caller refused holds none.
    #[tokio::test]
    async fn callers_beyond_the_bound_get_429() {
        for permits in [0, 1] {
            assert_eq!(
                status(&endpoint(permits), "/debug/explain/ns/rb", Some("t")).await,
                StatusCode::SERVICE_UNAVAILABLE
            );
        }
        let client = crate::explain::guard::tests::client(Default::default());
        let (ep, key, from) = (endpoint(1), BindingKey::rb("ns", "b"), Source::of(None));
        let held = admit(&ep, &client, "good", from, &key)
            .await
            .expect("a slot");
        let beyond = admit(&ep, &client, "good", from, &key).await.unwrap_err();
        assert_eq!(beyond.status(), StatusCode::TOO_MANY_REQUESTS);
        let unknown = admit(&ep, &client, "made-up", from, &key)
            .await
            .unwrap_err();
        assert_eq!(unknown.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(unknown.headers()[header::WWW_AUTHENTICATE], "Bearer");
        drop(held);
        assert!(admit(&ep, &client, "good", from, &key).await.is_ok());
    }
}
