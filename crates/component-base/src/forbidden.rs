//! Requests the API server refused as forbidden (HTTP 403): a missing RBAC permission.
//!
//! A daemon run with least-privilege RBAC (the chart's Roles) that lacks one rule gets 403s
//! from wherever it uses that permission: a watch that never starts, events that are never
//! written, a Lease that cannot be renewed. Each of those paths reports its own failure in its
//! own words, some once per request. This layer, in the one kube client of the process, sees
//! every answer and says what is missing in the words of an RBAC rule — verb, API group,
//! resource (with subresource), namespace, and the identity the server named — once per
//! (verb, group, resource) and [`REPORT_INTERVAL`], with the count of refusals since the
//! last report, so that the log stays readable however often the request is retried. Every
//! refusal is counted in a metric each daemon registers under its own name
//! ([`register`]). The request's own outcome is unchanged: the caller still gets its 403.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use kube::client::DynBody;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::metrics::{Labels, labels};

/// How long the log stays silent about one (verb, group, resource) after reporting it.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(60);

/// The largest 403 body read for the identity (a `Status` is a few hundred bytes); a larger
/// one fails the request.
const MAX_BODY: usize = 64 * 1024;

/// What a request asks for, in the terms of an RBAC rule (the API server's `RequestInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// The API group; empty for the core group.
    pub group: String,
    /// The resource, with `/<subresource>` when there is one (`resourcebindings/status`).
    pub resource: String,
    /// Empty for cluster-scoped resources.
    pub namespace: String,
    /// The object's name; empty for collections.
    pub name: String,
}

/// Subresources of a Namespace itself (`/api/v1/namespaces/<ns>/status`), as opposed to the
/// resources inside it.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// The RBAC terms of a resource request (`/api/v1/...` or `/apis/<group>/<version>/...`);
/// `None` for anything else (discovery, `/version`, ...).
pub fn request_info(method: &http::Method, path: &str, query: Option<&str>) -> Option<RequestInfo> {
    let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let group = match parts.first() {
        Some(&"api") if parts.len() >= 3 => {
            parts.drain(..2);
            String::new()
        }
        Some(&"apis") if parts.len() >= 4 => {
            let group = parts[1].to_string();
            parts.drain(..3);
            group
        }
        _ => return None,
    };
    let mut namespace = String::new();
    if parts[0] == "namespaces" && parts.len() > 1 {
        namespace = parts[1].to_string();
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts.drain(..2);
        }
    }
    let resource = match parts.get(2) {
        Some(sub) => format!("{}/{sub}", parts[0]),
        None => parts[0].to_string(),
    };
    let name = parts.get(1).copied().unwrap_or_default().to_string();
    // A Namespace is named by itself, not contained in one.
    if parts[0] == "namespaces" {
        namespace.clear();
    }
    let watch = query.is_some_and(|q| {
        q.split('&')
            .any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True"))
    });
    let verb = match *method {
        http::Method::GET | http::Method::HEAD if watch => "watch",
        http::Method::GET | http::Method::HEAD if name.is_empty() => "list",
        http::Method::GET | http::Method::HEAD => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if name.is_empty() => "deletecollection",
        http::Method::DELETE => "delete",
        _ => return None,
    };
    Some(RequestInfo {
        verb: verb.to_string(),
        group,
        resource,
        namespace,
        name,
    })
}

/// The identity a 403 `Status` message names: `... User "<identity>" cannot ...`, as the
/// API server's RBAC authorizer words it.
pub fn forbidden_user(body: &[u8]) -> Option<String> {
    let status: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = status.get("message")?.as_str()?;
    let rest = message.split_once("User \"")?.1;
    let (user, _) = rest.split_once("\" cannot")?;
    Some(user.to_string())
}

/// The log line for a refusal of `info` to `user`, `more` further refusals of the same (verb,
/// group, resource) having gone unreported since the last line.
pub fn report_line(info: &RequestInfo, user: Option<&str>, more: u64) -> String {
    let who = user.map_or_else(|| "this client".to_string(), |u| format!("{u:?}"));
    let mut line = format!(
        "forbidden: {who} may not {} resource {:?} in API group {:?}",
        info.verb, info.resource, info.group
    );
    if !info.namespace.is_empty() {
        line.push_str(&format!(" in the namespace {:?}", info.namespace));
    }
    line.push_str(
        " (RBAC: the Role or ClusterRole bound to this identity lacks the rule; what needs it goes without until it is granted)",
    );
    if more > 0 {
        line.push_str(&format!(
            "; {more} more such request(s) refused since the last report"
        ));
    }
    line
}

/// (verb, group, resource): what one RBAC rule grants.
type RuleKey = (String, String, String);

/// The refusals seen by the process: counted per (verb, group, resource), and reported in the
/// log at most once per [`REPORT_INTERVAL`] each.
#[derive(Debug)]
pub struct ForbiddenRequests {
    counter: Family<Labels, Counter>,
    /// All refusals, whatever the rule.
    total: AtomicU64,
    interval: Duration,
    /// Per (verb, group, resource): when last reported, and refusals since.
    reported: Mutex<HashMap<RuleKey, (Instant, u64)>>,
}

impl ForbiddenRequests {
    pub fn new(interval: Duration) -> Self {
        Self {
            counter: Family::default(),
            total: AtomicU64::new(0),
            interval,
            reported: Mutex::new(HashMap::new()),
        }
    }

    /// Count one refusal at `now`; `Some(n)` when it is to be logged, `n` refusals having gone
    /// unreported since the last line.
    pub fn refused(&self, info: &RequestInfo, now: Instant) -> Option<u64> {
        self.counter
            .get_or_create(&labels(&[
                ("group", &info.group),
                ("resource", &info.resource),
                ("verb", &info.verb),
            ]))
            .inc();
        self.total.fetch_add(1, Ordering::Relaxed);
        let key = (info.verb.clone(), info.group.clone(), info.resource.clone());
        let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        match reported.get_mut(&key) {
            Some((at, more)) if now.saturating_duration_since(*at) < self.interval => {
                *more += 1;
                None
            }
            Some((at, more)) => {
                let n = std::mem::take(more);
                *at = now;
                Some(n)
            }
            None => {
                reported.insert(key, (now, 0));
                Some(0)
            }
        }
    }

    /// All refusals so far.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The count of one series.
    pub fn count(&self, verb: &str, group: &str, resource: &str) -> u64 {
        self.counter
            .get_or_create(&labels(&[
                ("group", group),
                ("resource", resource),
                ("verb", verb),
            ]))
            .get()
    }
}

/// The process's refusals (one kube client, one set of permissions).
pub fn forbidden_requests() -> &'static ForbiddenRequests {
    static FORBIDDEN: OnceLock<ForbiddenRequests> = OnceLock::new();
    FORBIDDEN.get_or_init(|| ForbiddenRequests::new(REPORT_INTERVAL))
}

/// Register the process's refusal counter as `<prefix>_forbidden_requests_total{group,
/// resource,verb}` (e.g. `karmada_scheduler`).
pub fn register(registry: &mut Registry, prefix: &str) {
    registry.register(
        format!("{prefix}_forbidden_requests"),
        "Number of requests the API server refused as forbidden (RBAC), by verb, API group and resource",
        forbidden_requests().counter.clone(),
    );
}

/// Whether a watch failed because the API server refused it as forbidden (already reported by
/// [`ForbiddenLayer`]).
pub fn is_forbidden_watch(e: &kube::runtime::watcher::Error) -> bool {
    use kube::runtime::watcher::Error as W;
    match e {
        W::InitialListFailed(kube::Error::Api(s))
        | W::WatchStartFailed(kube::Error::Api(s))
        | W::WatchFailed(kube::Error::Api(s)) => s.code == 403,
        W::WatchError(s) => s.code == 403,
        _ => false,
    }
}

/// A kube client layer reporting 403 answers (see the module documentation). It sits right
/// above the HTTP connection, so each attempt on the wire is seen.
#[derive(Clone, Copy, Debug)]
pub struct ForbiddenLayer(pub &'static ForbiddenRequests);

impl<S> tower::Layer<S> for ForbiddenLayer {
    type Service = ForbiddenService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ForbiddenService {
            inner,
            requests: self.0,
        }
    }
}

/// The service of [`ForbiddenLayer`].
#[derive(Clone, Debug)]
pub struct ForbiddenService<S> {
    inner: S,
    requests: &'static ForbiddenRequests,
}

type Answer = http::Response<Box<DynBody>>;

impl<S, B> tower::Service<http::Request<B>> for ForbiddenService<S>
where
    S: tower::Service<http::Request<B>, Response = Answer>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
{
    type Response = Answer;
    type Error = tower::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, tower::BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // Kept (both clone cheaply) and parsed only for a 403: every request of the daemon
        // passes here, and almost none is refused.
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let requests = self.requests;
        let fut = self.inner.call(req);
        Box::pin(async move {
            let answer = fut.await.map_err(Into::into)?;
            if answer.status() != http::StatusCode::FORBIDDEN {
                return Ok(answer);
            }
            let Some(info) = request_info(&method, uri.path(), uri.query()) else {
                return Ok(answer);
            };
            let Some(more) = requests.refused(&info, Instant::now()) else {
                return Ok(answer);
            };
            // The identity is in the body: read it (small), then hand the same bytes on.
            let (parts, body) = answer.into_parts();
            let bytes = read_small(body).await?;
            let user = forbidden_user(&bytes);
            tracing::warn!(
                verb = %info.verb,
                group = %info.group,
                resource = %info.resource,
                namespace = %info.namespace,
                "{}",
                report_line(&info, user.as_deref(), more)
            );
            Ok(http::Response::from_parts(parts, full_body(bytes)))
        })
    }
}

/// A body of at most [`MAX_BODY`] bytes, read whole.
async fn read_small(mut body: Box<DynBody>) -> Result<Bytes, tower::BoxError> {
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            if buf.len() + data.len() > MAX_BODY {
                return Err(format!("a 403 answer's body is over {MAX_BODY} bytes").into());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// `bytes` as a body of the kube client's stack.
fn full_body(bytes: Bytes) -> Box<DynBody> {
    fn never(e: std::convert::Infallible) -> tower::BoxError {
        match e {}
    }
    Box::new(http_body_util::Full::new(bytes).map_err(never as fn(_) -> _))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str) -> Option<RequestInfo> {
        let (path, query) = path
            .split_once('?')
            .map_or((path, None), |(p, q)| (p, Some(q)));
        request_info(&method.parse().unwrap(), path, query)
    }

    fn terms(method: &str, path: &str) -> (String, String, String, String, String) {
        let i = info(method, path).expect(path);
        (i.verb, i.group, i.resource, i.namespace, i.name)
    }

    fn t(v: &str, g: &str, r: &str, ns: &str, n: &str) -> (String, String, String, String, String) {
        (v.into(), g.into(), r.into(), ns.into(), n.into())
    }

    #[test]
    fn requests_read_as_rbac_rules() {
        assert_eq!(
            terms("POST", "/api/v1/namespaces/default/events"),
            t("create", "", "events", "default", "")
        );
        assert_eq!(
            terms(
                "GET",
                "/apis/work.karmada.io/v1alpha2/resourcebindings?watch=true&resourceVersion=5"
            ),
            t("watch", "work.karmada.io", "resourcebindings", "", "")
        );
        assert_eq!(
            terms(
                "GET",
                "/apis/cluster.karmada.io/v1alpha1/clusters?limit=500"
            ),
            t("list", "cluster.karmada.io", "clusters", "", "")
        );
        assert_eq!(
            terms(
                "PATCH",
                "/apis/work.karmada.io/v1alpha2/namespaces/ns1/resourcebindings/web/status"
            ),
            t(
                "patch",
                "work.karmada.io",
                "resourcebindings/status",
                "ns1",
                "web"
            )
        );
        assert_eq!(
            terms(
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases/karmada-scheduler"
            ),
            t(
                "update",
                "coordination.k8s.io",
                "leases",
                "karmada-system",
                "karmada-scheduler"
            )
        );
        assert_eq!(
            terms("GET", "/apis/cluster.karmada.io/v1alpha1/clusters/member1"),
            t("get", "cluster.karmada.io", "clusters", "", "member1")
        );
        assert_eq!(
            terms("DELETE", "/api/v1/namespaces/x/pods"),
            t("deletecollection", "", "pods", "x", "")
        );
        // A Namespace and its own subresources.
        assert_eq!(
            terms("GET", "/api/v1/namespaces/kube-system"),
            t("get", "", "namespaces", "", "kube-system")
        );
        assert_eq!(
            terms("PUT", "/api/v1/namespaces/kube-system/finalize"),
            t("update", "", "namespaces/finalize", "", "kube-system")
        );
        // Not resource requests.
        assert_eq!(info("GET", "/version"), None);
        assert_eq!(info("GET", "/apis/work.karmada.io"), None);
        assert_eq!(info("GET", "/"), None);
    }

    #[test]
    fn the_identity_is_read_from_the_status() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"events is forbidden: User \"system:serviceaccount:karmada-system:ksrs\" cannot create resource \"events\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","code":403}"#;
        assert_eq!(
            forbidden_user(body).as_deref(),
            Some("system:serviceaccount:karmada-system:ksrs")
        );
        assert_eq!(forbidden_user(b"not json"), None);
        assert_eq!(
            forbidden_user(br#"{"message":"denied by a webhook"}"#),
            None
        );
    }

    #[test]
    fn the_line_names_verb_resource_namespace_and_identity() {
        let i = info("POST", "/api/v1/namespaces/default/events").unwrap();
        assert_eq!(
            report_line(&i, Some("system:serviceaccount:karmada-system:ksrs"), 0),
            "forbidden: \"system:serviceaccount:karmada-system:ksrs\" may not create resource \"events\" in API group \"\" in the namespace \"default\" (RBAC: the Role or ClusterRole bound to this identity lacks the rule; what needs it goes without until it is granted)"
        );
        let i = info("GET", "/apis/cluster.karmada.io/v1alpha1/clusters?watch=1").unwrap();
        let line = report_line(&i, None, 7);
        assert!(
            line.starts_with("forbidden: this client may not watch resource \"clusters\" in API group \"cluster.karmada.io\" (RBAC"),
            "{line}"
        );
        assert!(
            line.ends_with("; 7 more such request(s) refused since the last report"),
            "{line}"
        );
    }

    /// Logged once per (verb, group, resource) and interval, whatever the namespace; counted
    /// every time.
    #[test]
    fn refusals_are_counted_each_and_reported_once_per_interval() {
        let f = ForbiddenRequests::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let ev = |ns: &str| info("POST", &format!("/api/v1/namespaces/{ns}/events")).unwrap();
        let lease = info("PUT", "/apis/coordination.k8s.io/v1/namespaces/k/leases/l").unwrap();
        assert_eq!(f.refused(&ev("a"), t0), Some(0));
        assert_eq!(f.refused(&ev("b"), t0 + Duration::from_secs(1)), None);
        assert_eq!(f.refused(&ev("a"), t0 + Duration::from_secs(59)), None);
        // Another rule is reported on its own.
        assert_eq!(f.refused(&lease, t0 + Duration::from_secs(2)), Some(0));
        // A minute on: reported again, with the two held back.
        assert_eq!(f.refused(&ev("c"), t0 + Duration::from_secs(60)), Some(2));
        assert_eq!(f.refused(&ev("c"), t0 + Duration::from_secs(61)), None);
        assert_eq!(f.refused(&ev("c"), t0 + Duration::from_secs(121)), Some(1));
        assert_eq!(f.count("create", "", "events"), 6);
        assert_eq!(f.count("update", "coordination.k8s.io", "leases"), 1);
        assert_eq!(f.count("patch", "", "events"), 0);
        assert_eq!(f.total(), 7);
    }

    #[test]
    fn a_forbidden_watch_is_recognised() {
        use kube::core::Status;
        use kube::runtime::watcher::Error as W;
        let status = |code| Status::failure("no", "x").with_code(code).boxed();
        assert!(is_forbidden_watch(&W::InitialListFailed(kube::Error::Api(
            status(403)
        ))));
        assert!(is_forbidden_watch(&W::WatchStartFailed(kube::Error::Api(
            status(403)
        ))));
        assert!(is_forbidden_watch(&W::WatchError(status(403))));
        assert!(!is_forbidden_watch(&W::InitialListFailed(
            kube::Error::Api(status(500))
        )));
        assert!(!is_forbidden_watch(&W::WatchError(status(410))));
        assert!(!is_forbidden_watch(&W::NoResourceVersion));
    }

    /// Through the layer: a 403 is counted and its body still reaches the caller intact;
    /// other answers pass untouched.
    #[tokio::test]
    async fn the_layer_passes_the_answer_on() {
        use tower::{Layer as _, ServiceExt as _};
        let requests: &'static ForbiddenRequests =
            Box::leak(Box::new(ForbiddenRequests::new(REPORT_INTERVAL)));
        const STATUS: &str = r#"{"kind":"Status","message":"leases.coordination.k8s.io \"l\" is forbidden: User \"u\" cannot update resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"k\"","code":403}"#;
        let svc = ForbiddenLayer(requests).layer(tower::service_fn(
            |req: http::Request<()>| async move {
                let (code, text) = if req.method() == http::Method::PUT {
                    (403, STATUS)
                } else {
                    (200, "{}")
                };
                Ok::<_, tower::BoxError>(
                    http::Response::builder()
                        .status(code)
                        .body(full_body(Bytes::from(text)))
                        .unwrap(),
                )
            },
        ));
        let req = |m: &str| {
            http::Request::builder()
                .method(m)
                .uri("/apis/coordination.k8s.io/v1/namespaces/k/leases/l")
                .body(())
                .unwrap()
        };
        for method in ["PUT", "GET", "PUT"] {
            let answer = svc.clone().oneshot(req(method)).await.unwrap();
            let body = answer.into_body().collect().await.unwrap().to_bytes();
            let want = if method == "PUT" { STATUS } else { "{}" };
            assert_eq!(body, want.as_bytes());
        }
        assert_eq!(requests.count("update", "coordination.k8s.io", "leases"), 2);
        assert_eq!(requests.count("get", "coordination.k8s.io", "leases"), 0);
    }
}
