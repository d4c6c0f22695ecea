//! The one kube client of the process, built as the reference builds its REST config.
//!
//! `clientcmd.BuildConfigFromFlags(--master, --kubeconfig)`: with neither flag, the in-cluster
//! config; with `--kubeconfig`, that file's current context; `--master` overrides the server
//! URL. Every request then passes the shared `--kube-api-qps`/`--kube-api-burst` bucket, and
//! every attempt on the wire is counted in client-go's `rest_client_requests_total`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::Context as _;
use kube::client::DynBody;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tower::{Layer, Service};

use crate::metrics::{RestClientMetrics, rest_client};
use crate::options::KubeClientOptions as Options;
use crate::ratelimit::QpsLayer;

/// The REST config for these flags.
pub async fn rest_config(opts: &Options) -> anyhow::Result<Config> {
    let mut config = if opts.kubeconfig.is_empty() && opts.master.is_empty() {
        tracing::warn!(
            "Neither --kubeconfig nor --master was specified. Using the inClusterConfig. This might not work."
        );
        Config::incluster()
            .context("error building kubeconfig: unable to load in-cluster configuration")?
    } else if opts.kubeconfig.is_empty() {
        let url = opts.master.parse().with_context(|| {
            format!(
                "error building kubeconfig: invalid --master {:?}",
                opts.master
            )
        })?;
        Config::new(url)
    } else {
        let kc = Kubeconfig::read_from(&opts.kubeconfig)
            .with_context(|| format!("error building kubeconfig: reading {}", opts.kubeconfig))?;
        Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .with_context(|| format!("error building kubeconfig from {}", opts.kubeconfig))?
    };
    if !opts.kubeconfig.is_empty() && !opts.master.is_empty() {
        config.cluster_url = opts.master.parse().with_context(|| {
            format!(
                "error building kubeconfig: invalid --master {:?}",
                opts.master
            )
        })?;
    }
    // Watches are long polls; the client's read timeout must not cut them (kube sets the watch
    // timeout on the server side).
    config.read_timeout = None;
    let agent = user_agent(std::env::args_os().next().as_deref());
    if let Ok(value) = http::HeaderValue::from_str(&agent) {
        config.headers.push((http::header::USER_AGENT, value));
    }
    Ok(config)
}

/// client-go's default `User-Agent`, `<command>/<version> (<os>/<arch>) kubernetes/<commit>`,
/// as the reference's binaries send it: the command is the executable's file name, and the
/// version and commit are client-go's unset build values (`v0.0.0`, `$Format`), which is what
/// Karmada's builds report. Audit policies and log filters written for the reference's
/// components match ours.
pub fn user_agent(argv0: Option<&std::ffi::OsStr>) -> String {
    let command = argv0
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    format!(
        "{command}/v0.0.0 ({}/{}) kubernetes/$Format",
        std::env::consts::OS,
        crate::flags::go_arch()
    )
}

/// A client whose requests share one token bucket and are counted per attempt.
///
/// kube retries 429, 503 and 504 answers inside its own stack, below any layer added to it,
/// where a layer would see one request per call whatever the attempts. client-go counts every
/// attempt, so that retry is moved above the counting layer here: the same policy
/// (`RetryPolicy::server_retry`, as kube's `default_retry` installs it), over a buffer that
/// makes the stack cloneable for the retries (kube's `Client` holds one the same way). The
/// bucket stays outermost, where it was: one token per call.
pub fn build(config: Config, qps: f32, burst: i64) -> anyhow::Result<Client> {
    build_fenced(config, qps, burst, None)
}

/// [`build`], with writes refused while `fence` is not valid: checked for each attempt right
/// before it goes to the wire (below the limiter, the buffer and the retries), so a request
/// that waited out a stall in any of them is not sent after the lease lapsed.
pub fn build_fenced(
    config: Config,
    qps: f32,
    burst: i64,
    fence: Option<crate::fence::Fence>,
) -> anyhow::Result<Client> {
    build_with_read_limit(config, qps, burst, fence, READ_TIMEOUT)
}

/// How long a read that is not a watch (a LIST page, a GET) may take, from sending it to the
/// last byte of its answer: the API server's own default `--request-timeout`, after which it
/// gives up on such a request itself. kube's watcher bounds a watch (by its server-side
/// timeout) but not the LIST of a relist, so without this a server that accepts a LIST and
/// never answers would stall that watch for ever; bounded, the LIST fails and the watcher
/// retries it with its backoff.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// [`build_fenced`] with reads (not watches) bounded by `read_limit` ([`READ_TIMEOUT`]).
pub fn build_with_read_limit(
    mut config: Config,
    qps: f32,
    burst: i64,
    fence: Option<crate::fence::Fence>,
    read_limit: std::time::Duration,
) -> anyhow::Result<Client> {
    let host = host_label(&config.cluster_url);
    let retry = std::mem::replace(&mut config.default_retry, false);
    let builder =
        kube::client::ClientBuilder::try_from(config).context("building the kube client")?;
    // `tower`'s `buffer` and `retry` features are those kube-client enables for its own stack.
    let counted = builder
        .with_layer(&ReadDeadlineLayer(read_limit))
        .with_layer(&crate::forbidden::ForbiddenLayer(
            crate::forbidden::forbidden_requests(),
        ))
        .with_layer(&RequestMetricsLayer::new(host, rest_client()))
        .with_layer(&tower::util::option_layer(
            fence.map(crate::fence::FenceLayer),
        ))
        .with_layer(&tower::buffer::BufferLayer::<
            http::Request<kube::client::Body>,
        >::new(1024))
        .with_layer(&tower::util::option_layer(retry.then(|| {
            tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry())
        })));
    Ok(counted.with_layer(&QpsLayer::new(qps, burst)).build())
}

/// Bounds each read that is not a watch (method GET without `watch=true` or `watch=1`) to
/// its limit, answer head and body together: the body errors once the limit has passed. Each
/// attempt gets its own limit (the layer is below the retries). Writes are bounded by their
/// callers ([`crate::api::bounded`]) and watches by their server-side timeout.
#[derive(Clone, Copy, Debug)]
pub struct ReadDeadlineLayer(pub std::time::Duration);

impl<S> Layer<S> for ReadDeadlineLayer {
    type Service = ReadDeadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReadDeadline {
            inner,
            limit: self.0,
        }
    }
}

/// The service of [`ReadDeadlineLayer`].
#[derive(Clone, Debug)]
pub struct ReadDeadline<S> {
    inner: S,
    limit: std::time::Duration,
}

/// A read that did not complete within [`ReadDeadlineLayer`]'s limit.
#[derive(Debug, thiserror::Error)]
#[error("no complete answer from the API server within {0:?}")]
pub struct ReadTimedOut(pub std::time::Duration);

/// Whether a request is a watch (`watch=true` or `watch=1` in its query), which the server
/// keeps open: its limit is its own.
fn is_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True"))
    })
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, ReqBody> Service<http::Request<ReqBody>> for ReadDeadline<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<Box<DynBody>>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Box<DynBody>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<ReqBody>) -> Self::Future {
        let bounded = req.method() == http::Method::GET && !is_watch(req.uri());
        let limit = self.limit;
        let response = self.inner.call(req);
        Box::pin(async move {
            if !bounded {
                let response = response.await.map_err(Into::into)?;
                return Ok(response);
            }
            let deadline = tokio::time::Instant::now() + limit;
            let response = tokio::time::timeout_at(deadline, response)
                .await
                .map_err(|_| Box::new(ReadTimedOut(limit)) as BoxError)?
                .map_err(Into::into)?;
            Ok(response.map(|body| {
                Box::new(DeadlineBody {
                    body,
                    expiry: Some((Box::pin(tokio::time::sleep_until(deadline)), limit)),
                }) as Box<DynBody>
            }))
        })
    }
}

/// A response body that fails with [`ReadTimedOut`] once its read's limit has passed.
pub struct DeadlineBody<B> {
    body: B,
    expiry: Option<(Pin<Box<tokio::time::Sleep>>, std::time::Duration)>,
}

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if let Some((expiry, limit)) = &mut self.expiry
            && expiry.as_mut().poll(cx).is_ready()
        {
            let limit = *limit;
            self.expiry = None;
            return Poll::Ready(Some(Err(Box::new(ReadTimedOut(limit)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// client-go's `host` label: the `host:port` of the server URL (without any user info).
pub fn host_label(url: &http::Uri) -> String {
    url.authority()
        .map(|a| {
            let a = a.as_str();
            a.rsplit_once('@').map_or(a, |(_, host)| host).to_string()
        })
        .unwrap_or_default()
}

/// client-go's `code` label: the status code, or `<error>` when no answer came (a transport
/// error, or a call given up before its answer).
pub fn code_label(status: Option<http::StatusCode>) -> String {
    status.map_or_else(|| "<error>".to_string(), |s| s.as_u16().to_string())
}

/// Counts each request in `rest_client_requests_total{code,host,method}` once its answer's
/// head arrives (a watch when its stream opens), or fails.
#[derive(Clone, Debug)]
pub struct RequestMetricsLayer {
    host: Arc<str>,
    metrics: &'static RestClientMetrics,
}

impl RequestMetricsLayer {
    pub fn new(host: String, metrics: &'static RestClientMetrics) -> Self {
        Self {
            host: host.into(),
            metrics,
        }
    }
}

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetrics {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`RequestMetricsLayer`].
#[derive(Clone, Debug)]
pub struct RequestMetrics<S> {
    inner: S,
    layer: RequestMetricsLayer,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for RequestMetrics<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Unpin,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Counted<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqBody>) -> Self::Future {
        let method = req.method().clone();
        Counted {
            inner: self.inner.call(req),
            method: Some(method),
            layer: self.layer.clone(),
        }
    }
}

/// A request's future, counted when it resolves or, unresolved, when dropped.
pub struct Counted<F> {
    inner: F,
    /// `None` once counted.
    method: Option<http::Method>,
    layer: RequestMetricsLayer,
}

impl<F> Counted<F> {
    fn count(&mut self, status: Option<http::StatusCode>) {
        if let Some(method) = self.method.take() {
            self.layer
                .metrics
                .request(&code_label(status), method.as_str(), &self.layer.host);
        }
    }
}

impl<F, B, E> Future for Counted<F>
where
    F: Future<Output = Result<http::Response<B>, E>> + Unpin,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let out = std::task::ready!(Pin::new(&mut self.inner).poll(cx));
        let status = out.as_ref().ok().map(http::Response::status);
        self.count(status);
        Poll::Ready(out)
    }
}

impl<F> Drop for Counted<F> {
    fn drop(&mut self) {
        // Given up before an answer (a timeout): client-go counts its context error.
        self.count(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    /// A write the fence layer refuses (the lease lapsed after the caller's own check) comes
    /// back through the limiter, the buffer and the retries as a fenced failure, which callers
    /// hand back to whoever leads, never as a transient one they would retry. Nothing reaches
    /// the wire: the address has no server.
    #[tokio::test]
    async fn a_write_the_fence_layer_refuses_is_a_fenced_failure() {
        let url: http::Uri = "https://127.0.0.1:1".parse().unwrap();
        let fence = crate::fence::Fence::closed();
        let client = build_fenced(Config::new(url), 100.0, 100, Some(fence)).unwrap();
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "default");
        let failure = crate::write::merge_patch(
            &api,
            "cm",
            crate::write::Target::Main,
            &serde_json::json!({"data": {"k": "v"}}),
            || "patching ConfigMap default/cm".to_string(),
            std::time::Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert!(failure.is_fenced(), "{failure:?}");
        // Reads pass the fence: this one fails for want of a server, as a transient failure.
        let read = crate::api::bounded(
            || "reading ConfigMap default/cm".to_string(),
            std::time::Duration::from_secs(5),
            api.get("cm"),
        )
        .await
        .unwrap_err();
        assert!(!read.is_fenced() && read.is_transient(), "{read:?}");
    }

    /// A loopback API server that reads each request's head and then: for a watch, answers
    /// its head and holds the stream open; for a read on `/stall`, answers the head and never
    /// the body; for any other read, never answers. Returns its URL and the number of
    /// requests seen.
    async fn hung_server() -> (http::Uri, Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let line = String::from_utf8_lossy(&head).into_owned();
                    if line.contains("watch=true") || line.starts_with("GET /stall") {
                        let _ = socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                            .await;
                    }
                    // Hold the connection, answering nothing more.
                    let _ = socket.read(&mut buf).await;
                    futures::future::pending::<()>().await;
                });
            }
        });
        (url.parse().unwrap(), seen)
    }

    /// A LIST (and a GET whose body stalls) to a server that accepts and never answers fails
    /// within the read limit, so the watcher retries it; a watch on the same server stays
    /// open past that limit.
    #[tokio::test]
    async fn a_hung_list_fails_within_the_read_limit_and_a_watch_does_not() {
        use futures::StreamExt as _;
        let (url, seen) = hung_server().await;
        let limit = std::time::Duration::from_millis(500);
        let client = build_with_read_limit(Config::new(url), 100.0, 100, None, limit).unwrap();
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client.clone(), "default");
        let err = tokio::time::timeout(limit * 4, api.list(&Default::default()))
            .await
            .expect("the list fails within the limit")
            .unwrap_err();
        assert!(
            crate::api::api_failure(err)
                .message
                .contains("no complete answer"),
            "the error says why"
        );
        // The head arrives, the body never does.
        let stalled = client.request_text(http::Request::get("/stall").body(Vec::new()).unwrap());
        let stalled = tokio::time::timeout(limit * 4, stalled)
            .await
            .expect("the read fails within the limit");
        assert!(stalled.is_err(), "{stalled:?}");
        // The watcher's relist is retried after the failure, not stuck on the first one.
        let before = seen.load(std::sync::atomic::Ordering::SeqCst);
        let mut stream = kube::runtime::watcher::watcher(api.clone(), Default::default()).boxed();
        let started = std::time::Instant::now();
        let mut failures = 0;
        while failures < 2 {
            let event = tokio::time::timeout(limit * 4, stream.next()).await;
            match event {
                Ok(Some(Err(_))) => failures += 1,
                Ok(Some(Ok(_))) => {}
                other => panic!("the relist is stuck: {other:?}"),
            }
        }
        assert!(started.elapsed() < limit * 6, "{:?}", started.elapsed());
        assert!(seen.load(std::sync::atomic::Ordering::SeqCst) >= before + 2);
        // A watch is not cut by the read limit.
        let watch = api
            .watch(&Default::default(), "1")
            .await
            .expect("watch opens");
        let mut watch = Box::pin(watch);
        let idle = tokio::time::timeout(limit * 3, watch.next()).await;
        assert!(idle.is_err(), "the watch ended early: {idle:?}");
    }

    #[test]
    fn host_label_is_host_and_port() {
        let host = |u: &str| host_label(&u.parse().unwrap());
        assert_eq!(host("https://127.0.0.1:29217"), "127.0.0.1:29217");
        assert_eq!(host("https://10.96.0.1:443/"), "10.96.0.1:443");
        assert_eq!(host("https://karmada-apiserver"), "karmada-apiserver");
        assert_eq!(host("https://user:pw@[::1]:6443/x"), "[::1]:6443");
        assert_eq!(host("/just/a/path"), "");
    }

    /// The reference's binaries send client-go's default agent with its unset build values;
    /// the command is the executable's file name, whatever path it was started by.
    #[test]
    fn user_agent_is_client_gos_default() {
        let agent = user_agent(Some("/usr/local/bin/karmada-descheduler".as_ref()));
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(
            agent,
            "karmada-descheduler/v0.0.0 (linux/amd64) kubernetes/$Format"
        );
        assert!(agent.starts_with("karmada-descheduler/v0.0.0 ("), "{agent}");
        assert!(user_agent(None).starts_with("unknown/v0.0.0 ("));
    }

    #[test]
    fn code_label_is_the_status_or_error() {
        assert_eq!(code_label(Some(http::StatusCode::TOO_MANY_REQUESTS)), "429");
        assert_eq!(code_label(None), "<error>");
    }

    /// Each call is counted once: by its answer's status, its error, or, given up, as an
    /// error.
    #[tokio::test]
    async fn every_request_is_counted_once() {
        let metrics: &'static RestClientMetrics = Box::leak(Box::default());
        let layer = RequestMetricsLayer::new("h:1".into(), metrics);
        let svc = layer.layer(tower::service_fn(|req: http::Request<()>| {
            Box::pin(async move {
                match req.uri().path() {
                    "/fail" => Err("no route"),
                    "/hang" => futures::future::pending().await,
                    _ => Ok(http::Response::builder().status(201).body(()).unwrap()),
                }
            })
        }));
        let req = |m: &str, p: &str| http::Request::builder().method(m).uri(p).body(()).unwrap();
        svc.clone().oneshot(req("POST", "/ok")).await.unwrap();
        svc.clone().oneshot(req("POST", "/ok")).await.unwrap();
        assert!(svc.clone().oneshot(req("GET", "/fail")).await.is_err());
        let hung = svc.clone().oneshot(req("PATCH", "/hang"));
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(10), hung)
                .await
                .is_err()
        );
        assert_eq!(metrics.count("201", "POST", "h:1"), 2);
        assert_eq!(metrics.count("<error>", "GET", "h:1"), 1);
        assert_eq!(metrics.count("<error>", "PATCH", "h:1"), 1);
    }
}
