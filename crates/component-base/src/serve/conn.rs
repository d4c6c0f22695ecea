//! How a server holds its connections, so that no client can keep one or the process.
//!
//! Each server accepts in one loop and serves each connection (HTTP/1.1) in its own task:
//! - a request's header must arrive within [`Limits::header_read_timeout`], and a connection
//!   kept alive between requests is closed when the next header has not arrived within it;
//! - a handler answers within [`Limits::request_timeout`] (else 503), and its response must be
//!   taken by the client within as much again (else the connection is closed);
//! - at most [`Limits::max_connections`] are open: a new one closes the oldest connection
//!   that is not in a request (else the oldest), so a client that holds many connections
//!   cannot lock out a probe, and the accept loop never waits for a slot;
//! - on stop, connections waiting for a request are closed at once, requests in flight get
//!   [`Limits::shutdown_grace`] to finish, then every connection is closed.
//!
//! Each request carries its peer's address as axum's `ConnectInfo<SocketAddr>` in its
//! extensions, so that a handler can budget its work per client.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::IntoResponse as _;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt as _;

use crate::cancel::CancellationToken;

/// The bounds every connection of a server is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// For a request's header to arrive, and for an idle kept-alive connection to send the
    /// next one (the reference: 32 s for the header, 5 min idle).
    pub header_read_timeout: Duration,
    /// For a handler to answer, and again for the client to take the response (the
    /// reference's read and write timeouts: 5 min).
    pub request_timeout: Duration,
    /// Connections open at once (the reference has no bound).
    pub max_connections: usize,
    /// On stop, for requests in flight to finish before every connection is closed (the
    /// reference's process exits without waiting).
    pub shutdown_grace: Duration,
}

impl Limits {
    /// The reference's read and write timeouts.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(32),
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            max_connections: 256,
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// What the accept loop and a connection's task share.
#[derive(Default)]
struct ConnState {
    /// A request is in the handler or its response is being written.
    busy: AtomicBool,
    /// When the response being written must have been taken.
    write_deadline: Mutex<Option<Instant>>,
    /// The response's body has been handed to hyper; it is written once hyper flushes.
    body_done: AtomicBool,
    /// `write_deadline` changed.
    changed: Notify,
    /// Closes the connection at once (evicted).
    close: CancellationToken,
}

impl ConnState {
    fn set_deadline(&self, d: Option<Instant>) {
        *self
            .write_deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = d;
        self.changed.notify_one();
    }

    fn deadline(&self) -> Option<Instant> {
        *self
            .write_deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The response is in the kernel's hands: the connection waits for the next request.
    fn written(&self) {
        self.busy.store(false, Ordering::SeqCst);
        self.set_deadline(None);
    }
}

/// The connection's socket, telling its [`ConnState`] when a response has been written: hyper
/// flushes the socket only once its own buffer is empty.
struct Watched {
    io: TcpStream,
    state: Arc<ConnState>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = std::task::ready!(Pin::new(&mut this.io).poll_flush(cx));
        if r.is_ok() && this.state.body_done.swap(false, Ordering::SeqCst) {
            this.state.written();
        }
        Poll::Ready(r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The open connections of one server, oldest first.
#[derive(Default)]
struct Registry {
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<ConnState>>>,
}

impl Registry {
    /// Register a new connection, closing others to stay within `max`; how many were closed.
    fn admit(&self, max: usize) -> (u64, Arc<ConnState>, usize) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mut closed = 0;
        while open.len() >= max.max(1) {
            let victim = open
                .iter()
                .find(|(_, c)| !c.busy.load(Ordering::SeqCst))
                .or_else(|| open.iter().next())
                .map(|(id, _)| *id);
            let Some(c) = victim.and_then(|id| open.remove(&id)) else {
                break;
            };
            c.close.cancel();
            closed += 1;
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let state = Arc::new(ConnState::default());
        open.insert(id, state.clone());
        (id, state, closed)
    }

    fn remove(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A warning at most once a minute, with how many times it was due.
struct Throttled {
    last: Option<Instant>,
    count: u64,
}

impl Throttled {
    fn new() -> Self {
        Self {
            last: None,
            count: 0,
        }
    }

    /// Count one more; `Some(total)` when it is time to say so.
    fn due(&mut self, n: u64) -> Option<u64> {
        self.count += n;
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Duration::from_secs(60))
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.count))
    }
}

/// Serve `router` on `listener` within `limits` until `stop`, then close within the grace.
pub(super) async fn serve(
    name: String,
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
) {
    let registry = Arc::new(Registry::default());
    let drain = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let mut evictions = Throttled::new();
    let mut accept_errors = Throttled::new();
    let mut backoff = Duration::ZERO;
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            r = listener.accept() => r,
        };
        let (stream, peer) = match stream {
            Ok(accepted) => {
                backoff = Duration::ZERO;
                accepted
            }
            Err(e) => {
                // Out of descriptors or memory, or a connection reset before it was taken: wait
                // a little (as Go's server does: 5 ms doubling to 1 s) rather than spin.
                if let Some(n) = accept_errors.due(1) {
                    tracing::warn!("{name} server: accepting a connection failed ({n} times): {e}");
                }
                backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(backoff) => continue,
                }
            }
        };
        let (id, state, closed) = registry.admit(limits.max_connections);
        if closed > 0
            && let Some(n) = evictions.due(closed as u64)
        {
            tracing::warn!(
                "{name} server: {} connections open; closed the oldest to make room ({n} so far)",
                limits.max_connections
            );
        }
        let (router, drain, registry) = (router.clone(), drain.clone(), registry.clone());
        tasks.spawn(async move {
            connection(stream, peer, router, limits, &state, drain).await;
            registry.remove(id);
        });
    }
    drop(listener);
    drain.cancel();
    let all_closed = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.shutdown_grace, all_closed)
        .await
        .is_err()
    {
        tracing::info!(
            "{name} server: closing {} connections still open after {:?}",
            registry.len(),
            limits.shutdown_grace
        );
        tasks.shutdown().await;
    }
}

/// One connection, until it ends, is closed, or overstays.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Limits,
    state: &Arc<ConnState>,
    drain: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let shared = state.clone();
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let (router, state) = (router.clone(), shared.clone());
        req.extensions_mut().insert(ConnectInfo(peer));
        async move { Ok::<_, Infallible>(answer(router, req, limits, state).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let io = Watched {
        io: stream,
        state: state.clone(),
    };
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        let deadline = state.deadline();
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = state.close.cancelled() => return,
            _ = drain.cancelled(), if !draining => {
                // Waiting for a request (or for the rest of its header): nothing to finish.
                if !state.busy.load(Ordering::SeqCst) {
                    return;
                }
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = state.changed.notified() => {}
            _ = sleep_until(deadline) => return,
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The router's answer within the request timeout, its body tracked until written.
async fn answer(
    router: Router,
    req: Request<Incoming>,
    limits: Limits,
    state: Arc<ConnState>,
) -> Response<Tracked> {
    state.busy.store(true, Ordering::SeqCst);
    state.body_done.store(false, Ordering::SeqCst);
    let resp = match tokio::time::timeout(limits.request_timeout, router.oneshot(req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(never)) => match never {},
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the request was not answered within {:?}\n",
                limits.request_timeout
            ),
        )
            .into_response(),
    };
    state.set_deadline(Some(Instant::now() + limits.request_timeout));
    let (parts, body) = resp.into_parts();
    Response::from_parts(parts, Tracked { body, state })
}

/// A response body that tells its connection when hyper is done with it.
struct Tracked {
    body: Body,
    state: Arc<ConnState>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.state.body_done.store(true, Ordering::SeqCst);
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const HALF: &[u8] = b"GET /ok HTTP/1.1\r\nHost: x\r\n";
    /// An outer bound so that a failing test ends; never a measure of speed.
    const PATIENCE: Duration = Duration::from_secs(20);

    fn limits() -> Limits {
        Limits {
            header_read_timeout: Duration::from_millis(300),
            request_timeout: Duration::from_millis(300),
            max_connections: 64,
            shutdown_grace: Duration::from_millis(300),
        }
    }

    fn router() -> Router {
        Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    "late"
                }),
            )
            .route("/big", get(|| async { vec![b'x'; 64 << 20] }))
            .route(
                "/peer",
                get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
            )
    }

    async fn start(limits: Limits) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(
            "test".into(),
            listener,
            router(),
            limits,
            stop.clone(),
        ));
        (addr, stop, task)
    }

    async fn open(addr: SocketAddr, first: &[u8]) -> TcpStream {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(first).await.unwrap();
        s
    }

    /// Whether the server closed `s` (end of stream or reset) within the patience.
    async fn closed(s: &mut TcpStream) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(PATIENCE, s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }

    /// The status of a whole request on a new connection.
    async fn status(addr: SocketAddr, path: &str) -> u16 {
        let mut s = open(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await;
        finish(&mut s).await
    }

    async fn finish(s: &mut TcpStream) -> u16 {
        let mut out = Vec::new();
        tokio::time::timeout(PATIENCE, s.read_to_end(&mut out))
            .await
            .expect("an answer")
            .expect("read");
        String::from_utf8_lossy(&out)
            .get(9..12)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn handlers_see_the_address_each_request_came_from() {
        let (addr, stop, _) = start(limits()).await;
        for from in ["127.0.0.2:0", "127.0.0.3:0"] {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(from.parse().unwrap()).unwrap();
            let mut s = socket.connect(addr).await.unwrap();
            let local = s.local_addr().unwrap();
            s.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut out = String::new();
            tokio::time::timeout(PATIENCE, s.read_to_string(&mut out))
                .await
                .expect("an answer")
                .unwrap();
            assert!(out.starts_with("HTTP/1.1 200"), "{out}");
            assert!(out.ends_with(&local.to_string()), "{out} from {local}");
        }
        stop.cancel();
    }

    #[tokio::test]
    async fn half_sent_headers_are_closed_after_the_header_timeout() {
        let (addr, stop, _) = start(limits()).await;
        let mut slow = Vec::new();
        for _ in 0..30 {
            slow.push(open(addr, HALF).await);
        }
        let mut closed_count = 0;
        for s in &mut slow {
            closed_count += usize::from(closed(s).await);
        }
        assert_eq!(closed_count, 30);
        assert_eq!(status(addr, "/ok").await, 200);
        stop.cancel();
    }

    #[tokio::test]
    async fn an_idle_kept_alive_connection_is_closed() {
        let (addr, stop, _) = start(limits()).await;
        let mut s = open(addr, b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n").await;
        let mut buf = [0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        assert!(closed(&mut s).await);
        stop.cancel();
    }

    #[tokio::test]
    async fn a_handler_that_does_not_answer_gets_503() {
        let (addr, stop, _) = start(limits()).await;
        assert_eq!(status(addr, "/slow").await, 503);
        stop.cancel();
    }

    #[tokio::test]
    async fn a_client_that_does_not_take_its_response_is_closed() {
        let (addr, stop, _) = start(limits()).await;
        let mut s = open(addr, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").await;
        // Not reading for longer than the request timeout: the server gives up on the rest.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut got = Vec::new();
        let _ = tokio::time::timeout(PATIENCE, s.read_to_end(&mut got)).await;
        assert!(got.len() < 64 << 20, "the whole body was written");
        stop.cancel();
    }

    #[tokio::test]
    async fn at_the_cap_a_new_client_is_served_and_the_oldest_idle_one_closed() {
        let limits = Limits {
            max_connections: 4,
            header_read_timeout: Duration::from_secs(3600),
            ..limits()
        };
        let (addr, stop, _) = start(limits).await;
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(open(addr, HALF).await);
        }
        // Accepted in order: make sure the server took all four before the fifth.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(status(addr, "/ok").await, 200);
        // The oldest made room; the three others are still served when they finish.
        assert!(closed(&mut held[0]).await);
        for s in &mut held[1..] {
            s.write_all(b"Connection: close\r\n\r\n").await.unwrap();
            assert_eq!(finish(s).await, 200);
        }
        stop.cancel();
    }

    #[tokio::test]
    async fn at_the_cap_with_every_connection_busy_the_oldest_is_closed() {
        let limits = Limits {
            max_connections: 3,
            request_timeout: Duration::from_secs(3600),
            ..limits()
        };
        let (addr, stop, _) = start(limits).await;
        let mut busy = Vec::new();
        for _ in 0..3 {
            busy.push(open(addr, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n").await);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status(addr, "/ok").await, 200);
        assert!(closed(&mut busy[0]).await);
        stop.cancel();
    }

    #[tokio::test]
    async fn stop_ends_within_the_grace_whatever_clients_hold() {
        let limits = Limits {
            header_read_timeout: Duration::from_secs(3600),
            request_timeout: Duration::from_secs(3600),
            ..limits()
        };
        let (addr, stop, task) = start(limits).await;
        let mut held = Vec::new();
        for _ in 0..50 {
            held.push(open(addr, HALF).await);
        }
        held.push(open(addr, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n").await);
        held.push(open(addr, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").await);
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
        tokio::time::timeout(PATIENCE, task)
            .await
            .expect("the server ended")
            .unwrap();
        for s in &mut held {
            assert!(closed(s).await);
        }
        assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
    }

    #[tokio::test]
    async fn stop_closes_connections_waiting_for_a_request_without_waiting_for_the_grace() {
        let limits = Limits {
            header_read_timeout: Duration::from_secs(3600),
            shutdown_grace: Duration::from_secs(3600),
            ..limits()
        };
        let (addr, stop, task) = start(limits).await;
        let mut held = Vec::new();
        for _ in 0..50 {
            held.push(open(addr, HALF).await);
        }
        held.push(open(addr, b"").await);
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
        tokio::time::timeout(PATIENCE, task)
            .await
            .expect("the server ended before its hour of grace")
            .unwrap();
        for s in &mut held {
            assert!(closed(s).await);
        }
    }

    #[tokio::test]
    async fn stop_lets_a_request_in_flight_finish_within_the_grace() {
        let limits = Limits {
            shutdown_grace: Duration::from_secs(10),
            ..limits()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let router = Router::new().route(
            "/soon",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                "done"
            }),
        );
        let task = tokio::spawn(serve("test".into(), listener, router, limits, stop.clone()));
        let mut s = open(addr, b"GET /soon HTTP/1.1\r\nHost: x\r\n\r\n").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        assert_eq!(finish(&mut s).await, 200);
        tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    }
}
