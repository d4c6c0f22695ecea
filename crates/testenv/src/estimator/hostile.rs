//! Estimators that break the protocol on purpose: raw servers on loopback (TCP, or HTTP/2
//! whose gRPC answers a test writes frame by frame), where [`FakeEstimator`](super::FakeEstimator)
//! only gives well-formed answers. Client tests and end-to-end tests share them, so both
//! schedulers (ours and Go's) meet the very same broken answers.
//!
//! [`BrokenEstimator`] serves one broken answer shape to every call and records, per call,
//! who called for which cluster, how many bytes the caller's flow control let out and how long
//! the caller kept the answer open.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::{Bytes, BytesMut};
use estimator_client::pb::messages as pb;
use prost::Message as _;
use tokio::net::{TcpListener, TcpStream};

/// What an endless answer sends at most, so that a caller reading on cannot keep the server
/// busy for ever.
pub const ENDLESS_LIMIT: u64 = 1 << 30;
/// How long an endless answer lasts at most.
pub const ENDLESS_FOR: Duration = Duration::from_secs(60);

/// A TCP server on a free port of 127.0.0.1 that hands every connection to `serve_one`.
pub async fn raw_server<F, Fut>(serve_one: F) -> anyhow::Result<u16>
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding 127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            tokio::spawn(serve_one(socket));
        }
    });
    Ok(port)
}

/// One call as an HTTP/2 server saw it, read before answering.
#[derive(Clone, Debug, Default)]
pub struct Call {
    /// The method's HTTP/2 path (`/github.com.karmada_io...Estimator/MaxAvailableReplicas`).
    pub path: String,
    /// The `cluster` field of the request (every estimator request has it as field 1).
    pub cluster: String,
    /// The caller's `user-agent`: tells ours (`karmada-scheduler-rs/...`) from grpc-go.
    pub user_agent: String,
}

impl Call {
    /// The method name, the path's last segment.
    pub fn method(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

/// An HTTP/2 server whose every call is read (its [`Call`]) and then answered by `respond`,
/// given the response to send (headers and all); connections are kept open.
pub async fn h2_server_raw<F, Fut>(respond: F) -> anyhow::Result<u16>
where
    F: Fn(Call, h2::server::SendResponse<Bytes>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    raw_server(move |socket| {
        let respond = respond.clone();
        async move {
            let Ok(mut connection) = h2::server::handshake(socket).await else {
                return;
            };
            while let Some(Ok((request, reply))) = connection.accept().await {
                let respond = respond.clone();
                tokio::spawn(async move {
                    let call = read_call(request).await;
                    respond(call, reply).await;
                });
            }
        }
    })
    .await
}

/// An HTTP/2 server whose every call is answered with gRPC's 200 headers and then by
/// `respond`, given the call and the response stream.
pub async fn h2_server<F, Fut>(respond: F) -> anyhow::Result<u16>
where
    F: Fn(Call, h2::SendStream<Bytes>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    h2_server_raw(move |call, mut reply| {
        let respond = respond.clone();
        async move {
            if let Ok(stream) = reply.send_response(grpc_headers(), false) {
                respond(call, stream).await;
            }
        }
    })
    .await
}

/// The response headers of a gRPC answer.
pub fn grpc_headers() -> http::Response<()> {
    http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .expect("static headers")
}

/// Reads the request: its path, user agent, and the cluster named by its message.
async fn read_call(request: http::Request<h2::RecvStream>) -> Call {
    let (parts, mut body) = request.into_parts();
    let mut bytes = BytesMut::new();
    // A request is one small message; more than this is not an estimator call.
    while bytes.len() < 1 << 20 {
        match body.data().await {
            Some(Ok(chunk)) => {
                let _ = body.flow_control().release_capacity(chunk.len());
                bytes.extend_from_slice(&chunk);
            }
            _ => break,
        }
    }
    let message = bytes.get(5..).unwrap_or_default();
    let path = parts.uri.path().to_string();
    let cluster = match path.rsplit('/').next() {
        Some("MaxAvailableComponentSets") => pb::MaxAvailableComponentSetsRequest::decode(message)
            .map(|r| r.cluster)
            .unwrap_or_default(),
        Some("GetUnschedulableReplicas") => pb::UnschedulableReplicasRequest::decode(message)
            .map(|r| r.cluster)
            .unwrap_or_default(),
        _ => pb::MaxAvailableReplicasRequest::decode(message)
            .map(|r| r.cluster)
            .unwrap_or_default(),
    };
    let user_agent = parts
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    Call {
        path,
        cluster,
        user_agent,
    }
}

/// Sends `data`, waiting for flow-control capacity; false once the caller has gone (reset the
/// stream or closed the connection).
pub async fn send(stream: &mut h2::SendStream<Bytes>, mut data: Bytes) -> bool {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let granted = match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(n)) if n > 0 => n,
            Some(Ok(_)) => continue,
            _ => return false,
        };
        let chunk = data.split_to(granted.min(data.len()));
        if stream.send_data(chunk, false).is_err() {
            return false;
        }
    }
    true
}

/// gRPC framing: uncompressed flag, big-endian length, message.
pub fn frame(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out.into()
}

/// `grpc-status: 0`.
pub fn ok_trailers() -> http::HeaderMap {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    trailers
}

/// The answer `n` of any estimator method (each response has its number as field 1).
pub fn answer(n: i32) -> Vec<u8> {
    pb::MaxAvailableReplicasResponse { max_replicas: n }.encode_to_vec()
}

/// A response message of exactly `size` encoded bytes answering `replicas`: the answer plus
/// an unknown bytes field as padding (which a decoder must skip).
pub fn padded_response(replicas: i32, size: usize) -> Vec<u8> {
    let mut message = answer(replicas);
    // Field 15, wire type 2: tag 0x7a, varint length, bytes; the padding length is the one
    // whose total, its own varint included, comes out at `size`.
    let rest = size - message.len() - 1;
    let padding = (1..=5)
        .map(|varint| rest - varint)
        .find(|p| prost::encoding::encoded_len_varint(*p as u64) == rest - p)
        .expect("a padding length");
    message.push(0x7a);
    prost::encoding::encode_varint(padding as u64, &mut message);
    message.resize(size, 0xab);
    message
}

/// The broken shape of every answer of a [`BrokenEstimator`].
#[derive(Clone, Debug)]
pub enum Broken {
    /// Each number its own message, then an OK status (one number: a well-formed answer;
    /// none: no message and an OK status).
    Messages(Vec<i32>),
    /// This number, message after message, for as long as the caller reads (at most
    /// [`ENDLESS_LIMIT`] bytes, for [`ENDLESS_FOR`]).
    Endless(i32),
    /// An OK status in the response headers, with no body ("trailers-only").
    TrailersOnly,
}

/// One call as a [`BrokenEstimator`] served it.
#[derive(Clone, Debug)]
pub struct Served {
    pub call: Call,
    /// Bytes of gRPC frames the caller's flow control let out.
    pub sent: u64,
    /// From the response headers to the end of the answer: its last frame and status sent,
    /// or the caller gone.
    pub open: Duration,
    /// Whether the caller went away (reset the stream) before the answer was over.
    pub cut_off: bool,
}

/// A server on loopback whose every call gets the same [`Broken`] answer.
pub struct BrokenEstimator {
    pub port: u16,
    served: Arc<Mutex<Vec<Served>>>,
}

impl BrokenEstimator {
    pub async fn serve(broken: Broken) -> anyhow::Result<Self> {
        let served: Arc<Mutex<Vec<Served>>> = Arc::default();
        let record = served.clone();
        let port = h2_server_raw(move |call, mut reply| {
            let broken = broken.clone();
            let record = record.clone();
            async move {
                let started = Instant::now();
                let (sent, cut_off) = match broken {
                    Broken::TrailersOnly => {
                        let mut headers = grpc_headers();
                        headers
                            .headers_mut()
                            .insert("grpc-status", http::HeaderValue::from_static("0"));
                        (0, reply.send_response(headers, true).is_err())
                    }
                    Broken::Messages(numbers) => match reply.send_response(grpc_headers(), false) {
                        Err(_) => (0, true),
                        Ok(mut stream) => {
                            let mut sent = 0;
                            let mut whole = true;
                            for n in numbers {
                                let message = frame(&answer(n));
                                let len = message.len() as u64;
                                if !send(&mut stream, message).await {
                                    whole = false;
                                    break;
                                }
                                sent += len;
                            }
                            let cut_off = !whole || stream.send_trailers(ok_trailers()).is_err();
                            (sent, cut_off)
                        }
                    },
                    Broken::Endless(n) => match reply.send_response(grpc_headers(), false) {
                        Err(_) => (0, true),
                        Ok(mut stream) => {
                            let message = frame(&answer(n));
                            let mut sent = 0;
                            let mut cut_off = false;
                            while sent < ENDLESS_LIMIT && started.elapsed() < ENDLESS_FOR {
                                if !send(&mut stream, message.clone()).await {
                                    cut_off = true;
                                    break;
                                }
                                sent += message.len() as u64;
                                // Lets the connection's task run between messages.
                                tokio::task::yield_now().await;
                            }
                            if !cut_off {
                                cut_off = stream.send_trailers(ok_trailers()).is_err();
                            }
                            (sent, cut_off)
                        }
                    },
                };
                record
                    .lock()
                    .expect("broken estimator record")
                    .push(Served {
                        call,
                        sent,
                        open: started.elapsed(),
                        cut_off,
                    });
            }
        })
        .await?;
        Ok(Self { port, served })
    }

    /// The calls served so far (a call is recorded once its answer is over).
    pub fn served(&self) -> Vec<Served> {
        self.served.lock().expect("broken estimator record").clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_responses_decode_to_their_answer() {
        for size in [10, 100, 200, 70_000, 3 << 20] {
            let message = padded_response(5, size);
            assert_eq!(message.len(), size);
            let decoded = pb::MaxAvailableReplicasResponse::decode(message.as_slice()).unwrap();
            assert_eq!(decoded.max_replicas, 5);
        }
    }
}
