//! The HTTP/2 transport of estimator calls: one h2 connection per address, nothing in front.
//!
//! Why not tonic's `Channel`: it stacks a clonable, queued (tower `Buffer`), reconnecting
//! service over hyper's client over h2. Per idle connection that is about 28 KiB of queues and
//! tasks on top of h2's own ~27 KiB, before a single call; with one connection per member
//! cluster it was half the scheduler's peak at 1,000 clusters (docs/bench/scale/heap-1000c.md).
//! A [`Channel`] holds h2's `SendRequest` itself and every call clones it. tonic's `Grpc`
//! client still frames the messages, sends the metadata and `grpc-timeout`, and reads the
//! status from headers or trailers, so what goes on the wire and how an answer is judged are
//! unchanged; the HTTP/2 settings are those hyper's client used.
//!
//! Reconnection is what tonic's channel did: once a connection has ended (closed by the peer,
//! an I/O or protocol error), the next call dials the same address again (a host name is
//! resolved again) within the connect timeout, and fails as unavailable if that dial does.
//! Dropping the last clone of a [`Channel`] (and its calls) closes the connection.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http_body::{Body, Frame};
use http_body_util::BodyExt as _;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tonic::ConnectError;

use crate::resolver::{Address, check_ip};
use crate::unary::UnaryBody;

/// Errors as tonic's client expects them from a service.
pub type BoxError = tonic::codegen::StdError;

/// hyper's client defaults, which the estimator calls had before: receive windows large
/// enough that an answer never waits for a window update, a 16 KiB header list at most.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
const MAX_FRAME_SIZE: u32 = 16 * 1024;
const MAX_HEADER_LIST_SIZE: u32 = 16 * 1024;
const MAX_SEND_BUFFER_SIZE: usize = 1024 * 1024;
const INITIAL_MAX_SEND_STREAMS: usize = 100;
const MAX_LOCAL_ERROR_RESET_STREAMS: usize = 1024;

/// Sent as `user-agent` unless a call sets its own.
const USER_AGENT: &str = concat!("karmada-scheduler-rs/", env!("CARGO_PKG_VERSION"));

/// Byte stream of one connection, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// Calls to one estimator address over one HTTP/2 connection, dialled again when it ended.
/// Cheap to clone; all clones share the connection.
#[derive(Clone)]
pub struct Channel(Arc<Inner>);

struct Inner {
    address: Address,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    connect_timeout: Duration,
    /// `http://<address>`: scheme and authority of every request (as tonic's channel sent
    /// them, also over TLS).
    origin: http::Uri,
    /// The connection, replaced by a redial once it has ended.
    link: Mutex<Link>,
    /// One redial at a time; calls arriving meanwhile wait for its result.
    redial: tokio::sync::Mutex<()>,
}

/// One HTTP/2 connection.
struct Link {
    send: SendRequest<Bytes>,
    /// Set by the connection's task when the connection has ended.
    ended: Arc<AtomicBool>,
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("address", &self.0.address)
            .field("tls", &self.0.tls.is_some())
            .finish()
    }
}

impl Channel {
    /// Connects to `address` (TCP, TLS when `tls` is given, then the HTTP/2 preface) within
    /// `connect_timeout`, which bounds every later redial too.
    pub async fn connect(
        address: Address,
        tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
        connect_timeout: Duration,
    ) -> Result<Self, BoxError> {
        let origin = http::Uri::try_from(format!("http://{address}"))
            .map_err(|e| format!("invalid address: {e}"))?;
        let link = handshake_within(&address, tls.as_ref(), connect_timeout).await?;
        Ok(Self(Arc::new(Inner {
            origin,
            address,
            tls,
            connect_timeout,
            link: Mutex::new(link),
            redial: tokio::sync::Mutex::new(()),
        })))
    }

    /// Scheme and authority for the requests of this channel.
    pub fn origin(&self) -> &http::Uri {
        &self.0.origin
    }

    /// The live connection's sender, if there is one.
    fn live(&self) -> Option<SendRequest<Bytes>> {
        let link = self.0.link.lock().unwrap_or_else(|e| e.into_inner());
        (!link.ended.load(Ordering::Acquire)).then(|| link.send.clone())
    }

    /// The live connection's sender, dialling again if the connection has ended.
    async fn sender(&self) -> Result<SendRequest<Bytes>, BoxError> {
        if let Some(send) = self.live() {
            return Ok(send);
        }
        let _turn = self.0.redial.lock().await;
        if let Some(send) = self.live() {
            return Ok(send);
        }
        let address = &self.0.address;
        let link = handshake_within(address, self.0.tls.as_ref(), self.0.connect_timeout)
            .await
            .map_err(|e| -> BoxError { Box::new(ConnectError(e)) })?;
        tracing::debug!(%address, "estimator connection dialled again");
        let send = link.send.clone();
        *self.0.link.lock().unwrap_or_else(|e| e.into_inner()) = link;
        Ok(send)
    }

    /// Sends one request (its body is short: one gRPC message) and returns the response
    /// whose body streams the answer and its trailers.
    ///
    /// The body is held to one gRPC frame here ([`UnaryBody`]), not only by the fan-out's
    /// reading of it: every estimator method is unary, and this is where the bytes arrive and
    /// flow-control capacity is given back. Whatever reads the body (the fan-out's calls, the
    /// generated client of tests and benches, which reads on to the trailers) reads at most
    /// one message of [`MAX_RESPONSE_SIZE`](crate::codec::MAX_RESPONSE_SIZE) and the next
    /// frame's header, and the estimator can send no more than one stream window beyond that.
    async fn send(
        &self,
        request: http::Request<tonic::body::Body>,
    ) -> Result<http::Response<UnaryBody<ResponseBody>>, BoxError> {
        let (mut parts, body) = request.into_parts();
        let data = body.collect().await?.to_bytes();
        parts
            .headers
            .entry(http::header::USER_AGENT)
            .or_insert(http::HeaderValue::from_static(USER_AGENT));
        keep_out_of_hpack_table(&mut parts.headers);
        // The connection failed before this request left: unavailable, as grpc-go says of a
        // transport that is closing.
        let unsent = |e: h2::Error| -> BoxError { Box::new(ConnectError(Box::new(e))) };
        let mut send = self.sender().await?.ready().await.map_err(unsent)?;
        let (response, mut stream) = send
            .send_request(http::Request::from_parts(parts, ()), data.is_empty())
            .map_err(unsent)?;
        if !data.is_empty() {
            stream.send_data(data, true).map_err(classify)?;
        }
        let response = response.await.map_err(classify)?;
        Ok(response.map(|recv| {
            UnaryBody::new(ResponseBody {
                recv,
                data_done: false,
            })
        }))
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for Channel {
    type Response = http::Response<UnaryBody<ResponseBody>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness (a live connection, a free stream) is awaited per call, in `send`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.send(request).await })
    }
}

/// A response body: the DATA frames, then the trailers. Received bytes are given back to the
/// flow-control window as they are read.
pub struct ResponseBody {
    recv: h2::RecvStream,
    data_done: bool,
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if !self.data_done {
            match ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Fails only if the stream is already gone, which the next poll reports.
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(classify(e)))),
                None => self.data_done = true,
            }
        }
        match ready!(self.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(classify(e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}

/// Headers whose values are the same on every call of a connection: worth indexing in HPACK.
const INDEXED_HEADERS: [http::HeaderName; 3] = [
    http::header::CONTENT_TYPE,
    http::header::TE,
    http::header::USER_AGENT,
];

/// Marks every other header (`grpc-timeout`, the `object` metadata, ...) as not to be indexed.
/// Their values differ from call to call, so entries for them in the connection's HPACK table
/// would never be used again, yet each would hold its bytes until evicted: with up to 4 KiB of
/// table per connection and one connection per member cluster, megabytes at 1,000 clusters,
/// plus the work of indexing on every call. Sent as literals, the bytes on the wire are the
/// same as for a value not yet in the table.
fn keep_out_of_hpack_table(headers: &mut http::HeaderMap) {
    for (name, value) in headers.iter_mut() {
        if !INDEXED_HEADERS.contains(name) {
            value.set_sensitive(true);
        }
    }
}

/// An HTTP/2 error of a call as tonic should judge it. The connection broke (an I/O error, a
/// GOAWAY sent or received: the estimator does not speak HTTP/2 or violated it): unavailable,
/// as grpc-go reports a broken transport. A reset of the call's own stream is left to tonic,
/// which maps its reason as gRPC's HTTP/2 mapping says (`REFUSED_STREAM` is unavailable,
/// `CANCEL` cancelled, ...).
fn classify(error: h2::Error) -> BoxError {
    if error.is_io() || error.is_go_away() {
        Box::new(ConnectError(Box::new(error)))
    } else {
        Box::new(error)
    }
}

/// [`handshake`] within `limit`, failing with the reference's words when it takes longer.
async fn handshake_within(
    address: &Address,
    tls: Option<&(Arc<ClientConfig>, ServerName<'static>)>,
    limit: Duration,
) -> Result<Link, BoxError> {
    tokio::time::timeout(limit, handshake(address, tls))
        .await
        .unwrap_or_else(|_| {
            Err(format!("timeout waiting for connection to {address} after {limit:?}").into())
        })
}

/// TCP (+ TLS), then the HTTP/2 handshake; the connection is driven by its own task.
async fn handshake(
    address: &Address,
    tls: Option<&(Arc<ClientConfig>, ServerName<'static>)>,
) -> Result<Link, BoxError> {
    let io = open(address, tls).await?;
    let (send, connection) = h2::client::Builder::new()
        .initial_max_send_streams(INITIAL_MAX_SEND_STREAMS)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME_SIZE)
        .max_header_list_size(MAX_HEADER_LIST_SIZE)
        .max_send_buffer_size(MAX_SEND_BUFFER_SIZE)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESET_STREAMS))
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await?;
    let ended = Arc::new(AtomicBool::new(false));
    let flag = ended.clone();
    let target = address.to_string();
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(address = %target, "estimator connection ended: {e}");
        }
        flag.store(true, Ordering::Release);
    });
    Ok(Link { send, ended })
}

/// Opens the byte stream to `address`: TCP with no delay, then TLS negotiating `h2`.
async fn open(
    address: &Address,
    tls: Option<&(Arc<ClientConfig>, ServerName<'static>)>,
) -> Result<Box<dyn Io>, BoxError> {
    let port = address.port();
    let tcp = match address.ip() {
        Some(ip) => {
            check_ip(ip).map_err(|why| format!("{ip} cannot be an estimator's address ({why})"))?;
            TcpStream::connect((ip, port)).await?
        }
        None => {
            // Resolved apart from connecting so that a host without DNS (an `ExternalName`
            // holding a name there) gets an error saying so.
            let host = address.host();
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| format!("cannot resolve the host name {host:?}: {e}"))?
                .collect();
            TcpStream::connect(&fit_addresses(host, addrs)?[..]).await?
        }
    };
    tcp.set_nodelay(true)?;
    Ok(match tls {
        None => Box::new(tcp),
        Some((config, name)) => {
            let tls = tokio_rustls::TlsConnector::from(config.clone())
                .connect(name.clone(), tcp)
                .await?;
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                return Err("the server did not negotiate ALPN h2".into());
            }
            Box::new(tls)
        }
    })
}

/// The addresses a host name resolved to that can be an estimator's ([`check_ip`]): a name
/// is checked as an IP in a Service is, so DNS cannot steer a dial where the Service could
/// not. An error names the host and what it resolved to when none is left.
fn fit_addresses(
    host: &str,
    resolved: Vec<std::net::SocketAddr>,
) -> Result<Vec<std::net::SocketAddr>, String> {
    let (fit, unfit): (Vec<_>, Vec<_>) =
        resolved.into_iter().partition(|a| check_ip(a.ip()).is_ok());
    if fit.is_empty() && !unfit.is_empty() {
        let refused: Vec<String> = unfit
            .iter()
            .take(4)
            .map(|a| match check_ip(a.ip()) {
                Err(why) => format!("{} ({why})", a.ip()),
                Ok(()) => a.ip().to_string(),
            })
            .collect();
        return Err(format!(
            "the host name {host:?} resolves only to addresses no estimator can have: {}",
            refused.join(", ")
        ));
    }
    Ok(fit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolved addresses go through the same rules as the Service's own.
    #[test]
    fn resolved_addresses_are_checked() {
        let sa = |s: &str| s.parse::<std::net::SocketAddr>().unwrap();
        let kept = fit_addresses(
            "estimator.test",
            vec![sa("169.254.169.254:80"), sa("10.0.0.1:80"), sa("[::1]:80")],
        )
        .unwrap();
        assert_eq!(kept, [sa("10.0.0.1:80"), sa("[::1]:80")]);
        let err = fit_addresses(
            "metadata.test",
            vec![sa("169.254.169.254:80"), sa("[ff02::1]:80")],
        )
        .unwrap_err();
        assert_eq!(
            err,
            "the host name \"metadata.test\" resolves only to addresses no estimator can have: \
             169.254.169.254 (link-local), ff02::1 (multicast)"
        );
    }

    /// Values that change from call to call stay out of the HPACK table; the fixed ones do not.
    #[test]
    fn only_fixed_headers_are_indexed() {
        let mut headers = http::HeaderMap::new();
        headers.insert("content-type", "application/grpc".parse().unwrap());
        headers.insert("te", "trailers".parse().unwrap());
        headers.insert("user-agent", USER_AGENT.parse().unwrap());
        headers.insert("grpc-timeout", "2999m".parse().unwrap());
        headers.insert(
            "object",
            "kind=Deployment, name=default/web".parse().unwrap(),
        );
        keep_out_of_hpack_table(&mut headers);
        let sensitive: Vec<&str> = headers
            .iter()
            .filter(|(_, v)| v.is_sensitive())
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(sensitive, ["grpc-timeout", "object"]);
    }

    /// A channel whose clones are all dropped closes its connection (a deleted cluster or a
    /// replaced connection leaves no socket or task behind); a live clone keeps it open.
    #[tokio::test]
    async fn dropping_the_last_clone_closes_the_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (closed, mut closed_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let mut connection = h2::server::handshake(socket).await.unwrap();
            while let Some(Ok(_)) = connection.accept().await {}
            let _ = closed.send(());
        });
        let address = Address::new("127.0.0.1", port);
        let channel = Channel::connect(address, None, Duration::from_secs(5))
            .await
            .unwrap();
        let clone = channel.clone();
        drop(channel);
        let early = tokio::time::timeout(Duration::from_millis(300), &mut closed_rx).await;
        assert!(early.is_err(), "a clone still holds the connection");
        drop(clone);
        tokio::time::timeout(Duration::from_secs(5), closed_rx)
            .await
            .expect("the connection closes once no clone is left")
            .unwrap();
    }
}
