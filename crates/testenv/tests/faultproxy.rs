//! Tests of the TCP fault-injection proxy against small real TCP servers on
//! 127.0.0.1 (no control plane needed).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use testenv::faultproxy::{FaultProxy, Policy, Stats};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;

/// Upper bound for anything that should happen "at once"; only guards against
/// hangs, never asserted as a latency.
const PATIENCE: Duration = Duration::from_secs(10);

/// Starts a server on 127.0.0.1 that runs `handle` for each connection and
/// counts the connections it accepted.
async fn server<F, Fut>(handle: F) -> (SocketAddr, Arc<AtomicU64>)
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handle(stream));
        }
    });
    (addr, accepted)
}

/// Echoes every byte back; on end of stream closes its side too, then reports
/// how many bytes it echoed (or `None` if the connection failed).
async fn echo_server() -> (
    SocketAddr,
    Arc<AtomicU64>,
    mpsc::UnboundedReceiver<Option<u64>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (addr, accepted) = server(move |mut stream| {
        let tx = tx.clone();
        async move {
            let (mut r, mut w) = stream.split();
            let result = tokio::io::copy(&mut r, &mut w).await;
            let result = match result {
                Ok(n) => w.shutdown().await.ok().map(|()| n),
                Err(_) => None,
            };
            let _ = tx.send(result);
        }
    })
    .await;
    (addr, accepted, rx)
}

/// A deterministic, non-repeating-looking payload.
fn payload(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect()
}

/// Reads until the connection ends and returns how it ended plus the bytes
/// read: the outcome a client sees from a cut.
async fn read_to_end_or_error(stream: &mut TcpStream) -> (io::Result<()>, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => return (Ok(()), got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return (Err(e), got),
        }
    }
}

/// Asserts that the client sees a connection reset within [`PATIENCE`] and
/// receives no byte: what a cut by the proxy (RST) looks like, as opposed to a
/// clean end of stream. `earlier_write` is the result of the client's last
/// write: if the reset already surfaced there, the read that follows only has
/// to see the connection closed.
async fn assert_reset(stream: &mut TcpStream, earlier_write: io::Result<()>, what: &str) {
    let (ended, got) = timeout(PATIENCE, read_to_end_or_error(stream))
        .await
        .unwrap_or_else(|_| panic!("{what}: connection still open after {PATIENCE:?}"));
    assert!(
        got.is_empty(),
        "{what}: received {} bytes: {got:?}",
        got.len()
    );
    match (earlier_write, ended) {
        (_, Err(e)) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{what}: {e:?}"),
        (Err(e), Ok(())) => assert!(
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            ),
            "{what}: write failed with {e:?}"
        ),
        (Ok(()), Ok(())) => panic!("{what}: clean end of stream instead of a reset"),
    }
}

async fn roundtrip(stream: &mut TcpStream, msg: &[u8]) {
    stream.write_all(msg).await.unwrap();
    let mut back = vec![0u8; msg.len()];
    timeout(PATIENCE, stream.read_exact(&mut back))
        .await
        .expect("echo timed out")
        .expect("echo failed");
    assert_eq!(back, msg);
}

#[tokio::test]
async fn default_policy_passes_bytes_through_unchanged() {
    let (upstream, accepted, mut results) = echo_server().await;
    let proxy = FaultProxy::start(upstream, 1).await.unwrap();
    let client = TcpStream::connect(proxy.local_addr()).await.unwrap();

    let sent = payload(1 << 20);
    let (mut r, mut w) = client.into_split();
    let to_send = sent.clone();
    // Write and read at the same time: 1 MiB is more than the socket buffers.
    let writer = tokio::spawn(async move {
        w.write_all(&to_send).await.unwrap();
        w.shutdown().await.unwrap(); // half-close: the echo server then closes
    });
    let mut received = Vec::new();
    timeout(PATIENCE, r.read_to_end(&mut received))
        .await
        .expect("echo of 1 MiB timed out")
        .expect("read failed");
    writer.await.unwrap();

    assert_eq!(received.len(), sent.len());
    assert!(received == sent, "echoed bytes differ from the sent ones");
    let echoed = timeout(PATIENCE, results.recv()).await.unwrap().unwrap();
    assert_eq!(
        echoed,
        Some(sent.len() as u64),
        "server saw a different stream"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(
        proxy.stats(),
        Stats {
            connections: 1,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn cut_mid_request_truncates_and_resets() {
    // Counts what arrives until the end of the stream (or an error).
    let (tx, mut received) = mpsc::unbounded_channel();
    let (upstream, _) = server(move |mut stream| {
        let tx = tx.clone();
        async move {
            let mut total = 0u64;
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stream.read(&mut buf).await {
                total += n as u64;
            }
            let _ = tx.send(total);
        }
    })
    .await;
    let proxy = FaultProxy::start(upstream, 2).await.unwrap();
    proxy.set_policy(Policy {
        cut_mid_request: 1.0,
        ..Policy::default()
    });

    let mut client = TcpStream::connect(proxy.local_addr()).await.unwrap();
    // Small enough to be one chunk (one read by the proxy) on loopback, so the
    // proxy must cut inside it; if it is read in pieces, the first is cut.
    let sent = payload(1000);
    // May fail once the reset arrives; what matters is what follows.
    let written = client.write_all(&sent).await;
    assert_reset(&mut client, written, "client after cut").await;

    let got = timeout(PATIENCE, received.recv()).await.unwrap().unwrap();
    assert!(
        got < sent.len() as u64,
        "server received {got} of {} bytes: request was not cut",
        sent.len()
    );
    let stats = proxy.stats();
    assert_eq!(stats.cut_mid_request, 1, "{stats:?}");
    assert_eq!(stats.connections, 1, "{stats:?}");
}

#[tokio::test]
async fn drop_response_delivers_request_but_loses_answer() {
    const REQUEST: usize = 10_000;
    let (tx, mut requests) = mpsc::unbounded_channel();
    let (upstream, _) = server(move |mut stream| {
        let tx = tx.clone();
        async move {
            let mut request = vec![0u8; REQUEST];
            let read = stream.read_exact(&mut request).await.map(|_| request);
            let _ = tx.send(read.ok());
            let _ = stream.write_all(b"HTTP/1.1 201 Created\r\n\r\n").await;
            // Keep the connection until the proxy closes it.
            let mut sink = Vec::new();
            let _ = stream.read_to_end(&mut sink).await;
        }
    })
    .await;
    let proxy = FaultProxy::start(upstream, 3).await.unwrap();
    proxy.set_policy(Policy {
        drop_response: 1.0,
        ..Policy::default()
    });

    let mut client = TcpStream::connect(proxy.local_addr()).await.unwrap();
    let sent = payload(REQUEST);
    client.write_all(&sent).await.unwrap();
    assert_reset(&mut client, Ok(()), "client after dropped response").await;

    let request = timeout(PATIENCE, requests.recv()).await.unwrap().unwrap();
    assert_eq!(
        request.as_deref(),
        Some(&sent[..]),
        "server must receive the whole request"
    );
    let stats = proxy.stats();
    assert_eq!(stats.dropped_responses, 1, "{stats:?}");
    assert_eq!(stats.cut_mid_request, 0, "{stats:?}");
}

#[tokio::test]
async fn drop_response_applies_once_per_request_not_per_stream_chunk() {
    // A watch-like server: answers "ok" to the first request, then streams
    // events without being asked, ignoring anything else the client sends.
    let (upstream, _) = server(|mut stream| async move {
        let mut first = [0u8; 6];
        if stream.read_exact(&mut first).await.is_err() {
            return;
        }
        let (mut r, mut w) = stream.into_split();
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = r.read_to_end(&mut sink).await;
        });
        if w.write_all(b"ok").await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if w.write_all(b"event").await.is_err() {
                return;
            }
        }
    })
    .await;
    let proxy = FaultProxy::start(upstream, 4).await.unwrap();
    let mut client = TcpStream::connect(proxy.local_addr()).await.unwrap();
    client.write_all(b"watch\n").await.unwrap();
    let mut ok = [0u8; 2];
    timeout(PATIENCE, client.read_exact(&mut ok))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&ok, b"ok");

    // The response was already decided; the stream that follows answers no new
    // request, so it must pass even with every response dropped.
    proxy.set_policy(Policy {
        drop_response: 1.0,
        ..Policy::default()
    });
    let mut events = [0u8; 15];
    timeout(PATIENCE, client.read_exact(&mut events))
        .await
        .expect("events stopped flowing")
        .expect("stream broken although no request was sent");
    assert_eq!(&events, b"eventeventevent");
    assert_eq!(proxy.stats().dropped_responses, 0);

    // A new request makes the next server chunk "the response": dropped.
    client.write_all(b"x").await.unwrap();
    let (ended, _) = timeout(PATIENCE, read_to_end_or_error(&mut client))
        .await
        .expect("connection not closed after the next response");
    // Events forwarded before the proxy saw the request may still arrive; the
    // connection must then end, with a reset or an end of stream.
    if let Err(e) = ended {
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e:?}");
    }
    assert_eq!(proxy.stats().dropped_responses, 1);
}

#[tokio::test]
async fn response_delay_holds_back_the_reply() {
    let (upstream, _, _results) = echo_server().await;
    let proxy = FaultProxy::start(upstream, 5).await.unwrap();
    let delay = Duration::from_millis(200);
    proxy.set_policy(Policy {
        response_delay: delay..Duration::from_millis(250),
        ..Policy::default()
    });
    let mut client = TcpStream::connect(proxy.local_addr()).await.unwrap();
    let started = Instant::now();
    roundtrip(&mut client, b"ping").await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= delay,
        "reply came after {elapsed:?}, before {delay:?}"
    );
    assert!(proxy.stats().delayed_chunks >= 1);

    // Back to no delay: a second exchange on the same connection is not delayed.
    proxy.set_policy(Policy::default());
    let before = proxy.stats().delayed_chunks;
    roundtrip(&mut client, b"pong").await;
    assert_eq!(proxy.stats().delayed_chunks, before);
}

#[tokio::test]
async fn refuse_closes_new_connections_until_policy_is_reset() {
    let (upstream, accepted, _results) = echo_server().await;
    let proxy = FaultProxy::start(upstream, 6).await.unwrap();
    proxy.set_policy(Policy {
        refuse: true,
        ..Policy::default()
    });

    // The kernel completes the handshake before the proxy refuses, so connect
    // may succeed; the connection must then be closed at once.
    if let Ok(mut client) = TcpStream::connect(proxy.local_addr()).await {
        let written = client.write_all(b"hello").await;
        assert_reset(&mut client, written, "refused connection").await;
    }
    let stats = proxy.stats();
    assert_eq!(stats.refused, 1, "{stats:?}");
    assert_eq!(stats.connections, 0, "{stats:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "upstream was contacted");

    proxy.set_policy(Policy::default());
    let mut client = TcpStream::connect(proxy.local_addr()).await.unwrap();
    roundtrip(&mut client, b"hello again").await;
    assert_eq!(proxy.stats().connections, 1);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cut_all_closes_open_idle_connections_on_both_sides() {
    let (upstream, _, mut results) = echo_server().await;
    let proxy = FaultProxy::start(upstream, 7).await.unwrap();
    let mut client = TcpStream::connect(proxy.local_addr()).await.unwrap();
    roundtrip(&mut client, b"ping").await; // the upstream connection exists

    proxy.cut_all();
    assert_reset(&mut client, Ok(()), "client after cut_all").await;
    // The server side was reset too (the echo server reports a failed copy).
    let server_side = timeout(PATIENCE, results.recv()).await.unwrap().unwrap();
    assert_eq!(server_side, None, "server side was closed cleanly, not cut");

    // New connections still work.
    let mut again = TcpStream::connect(proxy.local_addr()).await.unwrap();
    roundtrip(&mut again, b"after the partition").await;
}

#[tokio::test]
async fn drop_stops_listener_and_closes_connections() {
    let (upstream, _, _results) = echo_server().await;
    let proxy = FaultProxy::start(upstream, 8).await.unwrap();
    let addr = proxy.local_addr();
    let mut client = TcpStream::connect(addr).await.unwrap();
    roundtrip(&mut client, b"ping").await;

    drop(proxy);
    assert_reset(&mut client, Ok(()), "client after drop").await;
    // The listening socket closes once the runtime drops the accept task.
    let deadline = Instant::now() + PATIENCE;
    loop {
        match TcpStream::connect(addr).await {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
            _ if Instant::now() > deadline => panic!("proxy still listening on {addr}"),
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[tokio::test]
async fn upstream_must_be_loopback() {
    let err = FaultProxy::start("192.0.2.1:443".parse().unwrap(), 0)
        .await
        .expect_err("non-loopback upstream accepted");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let v6 = FaultProxy::start("[::1]:443".parse().unwrap(), 0).await;
    assert!(v6.is_ok(), "IPv6 loopback rejected: {v6:?}");
}
