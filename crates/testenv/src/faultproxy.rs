//! A TCP fault-injection proxy for end-to-end tests.
//!
//! [`FaultProxy`] sits between a client (the scheduler under test) and a
//! kube-apiserver, both on loopback, and injects the failures a real network
//! and a real apiserver produce: requests cut in the middle, responses lost
//! after the server applied the write, slow responses, refused connections and
//! network partitions ([`FaultProxy::cut_all`]). The apiserver speaks TLS, so
//! the proxy works on raw TCP bytes and never parses HTTP: "a request" is
//! whatever the client sends, and "a response" is the first bytes the server
//! sends back after that (see [`Policy`]).
//!
//! Randomness comes from a small seeded SplitMix64 generator; each connection
//! and each direction of it get their own stream derived from the proxy seed
//! and the connection's accept index, so a failing run can be replayed with the
//! same seed (given the same order of events on each connection).
//!
//! ```no_run
//! # async fn t(apiserver: std::net::SocketAddr) -> std::io::Result<()> {
//! use testenv::faultproxy::{FaultProxy, Policy};
//! let proxy = FaultProxy::start(apiserver, 42).await?;
//! // point the client at proxy.local_addr() instead of the apiserver ...
//! proxy.set_policy(Policy { drop_response: 0.2, ..Policy::default() });
//! // ... run the workload, then check that faults really happened:
//! assert!(proxy.stats().dropped_responses > 0);
//! # Ok(()) }
//! ```

use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub(crate) use crate::rng::SplitMix64;

/// Size of the forwarding buffer, i.e. the largest "chunk" one read returns.
const CHUNK: usize = 64 * 1024;

/// What the proxy does to the traffic it forwards. Replace it at run time with
/// [`FaultProxy::set_policy`]; every field is read again for each chunk (and
/// `refuse` for each new connection), so a change applies immediately. The
/// default forwards everything unchanged.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Probability, per chunk read from the client, of forwarding only a
    /// random prefix of it (possibly empty) and then closing both sides: the
    /// server sees a truncated request followed by end of stream (so it cannot
    /// have applied it), the client a connection reset.
    pub cut_mid_request: f64,
    /// Probability, per response, of discarding it and resetting the
    /// connection. "A response" is the first chunk the server sends after the
    /// client sent something: the server has read the whole request (it
    /// answered), so it may have applied a write the client never learns about
    /// ("response lost"). Long-lived server->client streams (watches) get this
    /// decision only once per client request, not per event. Over TLS the
    /// handshake counts too (the ServerHello answers the ClientHello).
    pub drop_response: f64,
    /// Delay before forwarding each server->client chunk, uniform in
    /// `[start, end)`; an empty range (`end <= start`) means exactly `start`.
    /// Zero by default. Chunks of one connection stay in order: the delay holds
    /// back everything behind the delayed chunk, like a slow link would.
    pub response_delay: Range<Duration>,
    /// Refuse new connections: accept and immediately reset them, as a
    /// restarting apiserver behind a load balancer looks to its clients.
    /// Connections already open are not affected (use [`FaultProxy::cut_all`]).
    pub refuse: bool,
}

/// Counters of what the proxy did so far (see [`FaultProxy::stats`]), so a test
/// can check that the faults it asked for really happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted and forwarded (refused ones are not counted).
    pub connections: u64,
    /// Requests cut in the middle ([`Policy::cut_mid_request`]).
    pub cut_mid_request: u64,
    /// Responses discarded ([`Policy::drop_response`]).
    pub dropped_responses: u64,
    /// Connections refused ([`Policy::refuse`]).
    pub refused: u64,
    /// Server->client chunks held back by a non-zero [`Policy::response_delay`].
    pub delayed_chunks: u64,
}

/// A running proxy: listens on `127.0.0.1:<ephemeral>` and forwards every
/// connection to one upstream address, injecting faults per its [`Policy`].
///
/// Dropping it stops the listener and resets every open connection (both
/// sides), and all its tasks end: nothing outlives a test.
#[derive(Debug)]
pub struct FaultProxy {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    /// Cut generation: bumped by [`FaultProxy::cut_all`]; dropping the sender
    /// (with the proxy) tells every task to stop.
    cut: watch::Sender<u64>,
    listener: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Shared {
    policy: Mutex<Policy>,
    connections: AtomicU64,
    cut_mid_request: AtomicU64,
    dropped_responses: AtomicU64,
    refused: AtomicU64,
    delayed_chunks: AtomicU64,
    /// The loopback address upstream connections come from (the upstream sees it as the
    /// client's address, e.g. in the API server's audit log).
    source: Mutex<Option<std::net::IpAddr>>,
}

impl Shared {
    fn policy(&self) -> Policy {
        // A poisoned lock only means a panic elsewhere while holding it; the
        // policy itself is always whole, so keep using it rather than panic.
        self.policy
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl FaultProxy {
    /// Listens on `127.0.0.1:<ephemeral>` and forwards each accepted connection
    /// to `upstream`, with the default (pass-through) policy. `seed` makes the
    /// injected faults reproducible.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] if `upstream` is not a
    /// loopback address: the proxy is a test tool and must never relay traffic
    /// off the machine.
    pub async fn start(upstream: SocketAddr, seed: u64) -> io::Result<FaultProxy> {
        if !upstream.ip().to_canonical().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("fault proxy upstream {upstream} is not a loopback address"),
            ));
        }
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let local_addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let (cut, cut_rx) = watch::channel(0u64);
        let listener = tokio::spawn(accept_loop(
            listener,
            upstream,
            seed,
            Arc::clone(&shared),
            cut_rx,
        ));
        Ok(FaultProxy {
            local_addr,
            shared,
            cut,
            listener,
        })
    }

    /// The address clients connect to instead of the upstream.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Replaces the fault policy. It applies from the next chunk each open
    /// connection forwards and from the next accepted connection on.
    pub fn set_policy(&self, policy: Policy) {
        *self
            .shared
            .policy
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = policy;
    }

    /// The counters of what was injected so far.
    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            connections: get(&s.connections),
            cut_mid_request: get(&s.cut_mid_request),
            dropped_responses: get(&s.dropped_responses),
            refused: get(&s.refused),
            delayed_chunks: get(&s.delayed_chunks),
        }
    }

    /// Connect upstream from `source` (a loopback address such as 127.0.0.2), so that the
    /// upstream can tell this proxy's clients from others (the API server's audit log records
    /// it as the source IP). Applies to new connections.
    pub fn set_source(&self, source: std::net::IpAddr) -> io::Result<()> {
        if !source.to_canonical().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("fault proxy source {source} is not a loopback address"),
            ));
        }
        *self
            .shared
            .source
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(source);
        Ok(())
    }

    /// Resets every connection open now, on both sides, as a network partition
    /// (or a crashing load balancer) would. The proxy keeps accepting new
    /// connections; combine with [`Policy::refuse`] for a longer outage.
    pub fn cut_all(&self) {
        self.cut
            .send_modify(|generation| *generation = generation.wrapping_add(1));
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Closes the listening socket (once the runtime drops the task); the
        // connection tasks see the `cut` sender go away and reset their sockets.
        self.listener.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    seed: u64,
    shared: Arc<Shared>,
    mut cut: watch::Receiver<u64>,
) {
    let mut index: u64 = 0;
    loop {
        let accepted = tokio::select! {
            changed = cut.changed() => {
                if changed.is_err() {
                    return; // the proxy was dropped
                }
                continue; // cut_all: only open connections are affected
            }
            accepted = listener.accept() => accepted,
        };
        let client = match accepted {
            Ok((client, _)) => client,
            Err(_) => {
                // E.g. out of file descriptors: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let conn_index = index;
        index = index.wrapping_add(1);
        if shared.policy().refuse {
            Shared::bump(&shared.refused);
            reset(&client);
            continue;
        }
        Shared::bump(&shared.connections);
        // A cut_all after this point must reach this connection, even if the
        // task only starts after it: remember the generation it was born in.
        let generation = *cut.borrow();
        tokio::spawn(connection(
            client,
            upstream,
            Arc::clone(&shared),
            cut.clone(),
            generation,
            [
                SplitMix64::for_stream(seed, conn_index, 0),
                SplitMix64::for_stream(seed, conn_index, 1),
            ],
        ));
    }
}

/// How forwarding (one direction, or the whole connection) ended.
enum Flow {
    /// The sender closed its side cleanly; the close was passed on.
    Eof,
    /// A socket error (e.g. the peer reset): pass it on as a reset.
    Error,
    /// An injected [`Policy::cut_mid_request`]: the server side was already
    /// shut down after the truncated request; reset the client.
    CutMidRequest,
    /// An injected [`Policy::drop_response`]: reset both sides.
    DropResponse,
    /// [`FaultProxy::cut_all`] or the proxy was dropped: reset both sides.
    Cut,
}

/// A connection to `upstream`, from `source` when given.
async fn connect_from(
    source: Option<std::net::IpAddr>,
    upstream: SocketAddr,
) -> io::Result<TcpStream> {
    let Some(ip) = source else {
        return TcpStream::connect(upstream).await;
    };
    let socket = if ip.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(upstream).await
}

async fn connection(
    mut client: TcpStream,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    mut cut: watch::Receiver<u64>,
    generation: u64,
    [mut c2s_rng, mut s2c_rng]: [SplitMix64; 2],
) {
    let source = *shared
        .source
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let connected = tokio::select! {
        () = cancelled(&mut cut, generation) => None,
        connected = connect_from(source, upstream) => connected.ok(),
    };
    let Some(mut server) = connected else {
        reset(&client);
        return;
    };
    // Forward small chunks (HTTP/2 frames, TLS records) as they come, without
    // Nagle adding latency the real path would not have.
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);

    let flow = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let awaiting_response = AtomicBool::new(false);
        let c2s = client_to_server(
            client_read,
            server_write,
            &shared,
            &mut c2s_rng,
            &awaiting_response,
        );
        let s2c = server_to_client(
            server_read,
            client_write,
            &shared,
            &mut s2c_rng,
            &awaiting_response,
        );
        tokio::select! {
            () = cancelled(&mut cut, generation) => Flow::Cut,
            flow = both(c2s, s2c) => flow,
        }
    };
    match flow {
        Flow::Eof => {} // both sides closed cleanly: plain close
        Flow::CutMidRequest => reset(&client),
        Flow::Error | Flow::DropResponse | Flow::Cut => {
            reset(&client);
            reset(&server);
        }
    }
}

/// Runs both directions until both ended cleanly or either ended otherwise.
async fn both(c2s: impl Future<Output = Flow>, s2c: impl Future<Output = Flow>) -> Flow {
    let mut c2s = std::pin::pin!(c2s);
    let mut s2c = std::pin::pin!(s2c);
    let (mut c2s_done, mut s2c_done) = (false, false);
    while !(c2s_done && s2c_done) {
        let flow = tokio::select! {
            flow = &mut c2s, if !c2s_done => {
                c2s_done = true;
                flow
            }
            flow = &mut s2c, if !s2c_done => {
                s2c_done = true;
                flow
            }
        };
        if !matches!(flow, Flow::Eof) {
            return flow;
        }
    }
    Flow::Eof
}

/// The next chunk from `from`; at its end of stream the half-close is passed on to `to`
/// (the other side learns that this one is done sending), and the flow ends.
async fn read_chunk(
    from: &mut ReadHalf<'_>,
    to: &mut WriteHalf<'_>,
    buf: &mut [u8],
) -> Result<usize, Flow> {
    match from.read(buf).await {
        Ok(0) => Err(match to.shutdown().await {
            Ok(()) => Flow::Eof,
            Err(_) => Flow::Error,
        }),
        Ok(n) => Ok(n),
        Err(_) => Err(Flow::Error),
    }
}

async fn client_to_server(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    shared: &Shared,
    rng: &mut SplitMix64,
    awaiting_response: &AtomicBool,
) -> Flow {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match read_chunk(&mut from, &mut to, &mut buf).await {
            Ok(n) => n,
            Err(end) => return end,
        };
        if rng.chance(shared.policy().cut_mid_request) {
            Shared::bump(&shared.cut_mid_request);
            let keep = rng.below(n as u64) as usize;
            // A FIN (not a reset) after the prefix, so the server really reads
            // the truncated request before it sees the end of the stream.
            let _ = to.write_all(&buf[..keep]).await;
            let _ = to.shutdown().await;
            return Flow::CutMidRequest;
        }
        // Set before forwarding, so the server's answer cannot overtake it.
        awaiting_response.store(true, Ordering::Release);
        if to.write_all(&buf[..n]).await.is_err() {
            return Flow::Error;
        }
    }
}

async fn server_to_client(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    shared: &Shared,
    rng: &mut SplitMix64,
    awaiting_response: &AtomicBool,
) -> Flow {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match read_chunk(&mut from, &mut to, &mut buf).await {
            Ok(n) => n,
            Err(end) => return end,
        };
        let policy = shared.policy();
        if awaiting_response.swap(false, Ordering::AcqRel) && rng.chance(policy.drop_response) {
            Shared::bump(&shared.dropped_responses);
            return Flow::DropResponse;
        }
        let delay = rng.duration_in(&policy.response_delay);
        if !delay.is_zero() {
            Shared::bump(&shared.delayed_chunks);
            tokio::time::sleep(delay).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return Flow::Error;
        }
    }
}

/// Completes when `cut_all` was called after `generation`, or the proxy was
/// dropped (the sender is gone).
async fn cancelled(cut: &mut watch::Receiver<u64>, generation: u64) {
    loop {
        if *cut.borrow_and_update() != generation {
            return;
        }
        if cut.changed().await.is_err() {
            return;
        }
    }
}

/// Makes the coming close of `stream` abortive: the peer gets a TCP RST
/// ("connection reset by peer"), as after a crash or a partition, instead of a
/// clean end of stream it could mistake for a complete answer.
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

/// The proxy's draws on [`SplitMix64`]: fault decisions per connection and direction.
impl SplitMix64 {
    /// An independent stream per (proxy seed, connection index, direction), so
    /// one connection's draws do not depend on how others interleave.
    fn for_stream(seed: u64, conn_index: u64, direction: u64) -> Self {
        let mut derive = SplitMix64(conn_index.wrapping_mul(2).wrapping_add(direction));
        SplitMix64(seed ^ derive.next_u64())
    }

    /// True with probability `p` (so 1.0 is always, 0.0 or NaN never). Always
    /// draws, so the stream does not depend on the policy values.
    fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// Uniform in `[0, n)`; 0 when `n` is 0.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `range`, or `range.start` when it is empty.
    fn duration_in(&mut self, range: &Range<Duration>) -> Duration {
        if range.end <= range.start {
            return range.start;
        }
        let span = (range.end - range.start)
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        range.start + Duration::from_nanos(self.below(span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |seed, conn, dir| {
            let mut rng = SplitMix64::for_stream(seed, conn, dir);
            (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 3, 1), draw(7, 3, 1));
        assert_ne!(draw(7, 3, 0), draw(7, 3, 1));
        assert_ne!(draw(7, 3, 0), draw(7, 4, 0));
        assert_ne!(draw(7, 3, 0), draw(8, 3, 0));
    }

    #[test]
    fn draws_stay_in_range() {
        let mut rng = SplitMix64(1);
        for _ in 0..10_000 {
            let f = rng.next_f64();
            assert!((0.0..1.0).contains(&f));
            assert!(rng.below(10) < 10);
            assert!(rng.chance(1.0));
            assert!(!rng.chance(0.0));
            assert!(!rng.chance(f64::NAN));
            let d = rng.duration_in(&(Duration::from_millis(5)..Duration::from_millis(7)));
            assert!(d >= Duration::from_millis(5) && d < Duration::from_millis(7));
        }
        assert_eq!(rng.below(0), 0);
        let fixed = Duration::from_millis(3);
        assert_eq!(rng.duration_in(&(fixed..fixed)), fixed);
        assert_eq!(
            rng.duration_in(&(Duration::ZERO..Duration::ZERO)),
            Duration::ZERO
        );
    }
}
