//! A broken or hostile estimator costs one timeout and bounded memory.
//!
//! Each test points cluster `m1` at a real TCP server on loopback that misbehaves at a
//! different layer (bytes that are not HTTP/2, a forbidden HTTP/2 frame, a gRPC response
//! far over the size limit, one just under it, a response trickled a byte at a time) and
//! `m2` at a well-behaved estimator. With the per-cluster failure policy the fan-out must
//! come back within the estimator timeout (plus scheduling slack), with `m1` failed and `m2`
//! answered; the error says what happened. Memory is bounded by the client's response
//! limit ([`MAX_RESPONSE_SIZE`]): a response over it is refused at its length prefix, which
//! the oversized-response test shows with a prefix of 512 MiB followed by a stream of data.
//!
//! An answer is held to the shape of a unary call, as grpc-go holds it: a second message, an
//! endless stream of them, or no message with an OK status fail the call at once with
//! grpc-go's code and words, and never take the timeout.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::cluster;
use estimator_client::codec::MAX_RESPONSE_SIZE;
use estimator_client::{
    ConnectionCache, EstimatorOptions, FailurePolicy, InMemoryServiceSource, SchedulerEstimator,
};
use karmada_api::Cluster;
use karmada_api::work::ObjectReference;
use scheduler_core::estimator::{Ask, EstimateRequest, Estimator};
use testenv::estimator::hostile::{
    Broken, BrokenEstimator, frame, h2_server, ok_trailers, padded_response, raw_server, send,
};
use testenv::estimator::{FakeEstimator, Running, external_name_service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `--scheduler-estimator-timeout` of these tests.
const TIMEOUT: Duration = Duration::from_secs(1);
/// What a loaded 2-core CI machine may add to one timeout.
const SLACK: Duration = Duration::from_secs(3);
/// The healthy estimator's answer.
const HEALTHY: i32 = 7;

/// Fan-out over `m1` (on `port`) and a healthy `m2`, per-cluster policy; the answers, the
/// time taken and the client's metrics afterwards.
async fn ask_with_hostile_m1(port: u16) -> (Vec<(String, i32)>, Duration, String) {
    let healthy: Running = FakeEstimator::answering(HEALTHY).serve().await.unwrap();
    let options = EstimatorOptions {
        timeout: TIMEOUT,
        failure_policy: FailurePolicy::PerCluster,
        ..Default::default()
    };
    let source = Arc::new(InMemoryServiceSource::with_objects(
        [
            external_name_service("m1", "127.0.0.1", port),
            external_name_service("m2", "127.0.0.1", healthy.addr.port()),
        ],
        [],
    ));
    let cache = Arc::new(ConnectionCache::new(options, source));
    let estimator = SchedulerEstimator::new(cache.clone());
    let clusters: Vec<Cluster> = vec![cluster("m1"), cluster("m2")];
    let refs: Vec<&Cluster> = clusters.iter().collect();
    let resource = ObjectReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "web".into(),
        ..Default::default()
    };
    let request = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: None,
        components: &[],
        namespace: "default",
        assumed: None,
    };
    let started = Instant::now();
    let answers = estimator
        .estimate(&refs, request)
        .await
        .expect("the per-cluster policy answers");
    let took = started.elapsed();
    let mut registry = prometheus_client::registry::Registry::default();
    cache.register_metrics(&mut registry);
    let mut metrics = String::new();
    prometheus_client::encoding::text::encode(&mut metrics, &registry).unwrap();
    (answers, took, metrics)
}

/// `m1` failed, `m2` answered, within one timeout.
fn assert_contained(answers: &[(String, i32)], took: Duration) {
    assert_eq!(
        answers,
        [("m1".to_string(), -1), ("m2".to_string(), HEALTHY)],
        "m1 must fail alone"
    );
    assert!(
        took < TIMEOUT + SLACK,
        "the fan-out took {took:?}, more than one timeout ({TIMEOUT:?}) and slack"
    );
}

/// The error of a call to `m1` alone under the default policy (the per-cluster fan-out hides
/// it behind `-1`), and the time it took.
async fn error_for(port: u16) -> (String, Duration) {
    error_within(port, TIMEOUT).await
}

/// [`error_for`] with this estimator timeout.
async fn error_within(port: u16, timeout: Duration) -> (String, Duration) {
    let options = EstimatorOptions {
        timeout,
        ..Default::default()
    };
    let source = Arc::new(InMemoryServiceSource::with_objects(
        [external_name_service("m1", "127.0.0.1", port)],
        [],
    ));
    let estimator = SchedulerEstimator::new(Arc::new(ConnectionCache::new(options, source)));
    let m1 = cluster("m1");
    let resource = ObjectReference::default();
    let started = Instant::now();
    let err = estimator
        .estimate(
            &[&m1],
            EstimateRequest {
                ask: Ask::Replicas,
                resource: &resource,
                replica_requirements: None,
                components: &[],
                namespace: "default",
                assumed: None,
            },
        )
        .await
        .expect_err("a hostile estimator fails the call")
        .0;
    (err, started.elapsed())
}

/// Reads what the client sends (its preface), without answering it.
async fn swallow(socket: &mut TcpStream) {
    let mut buf = [0u8; 1024];
    let _ = tokio::time::timeout(Duration::from_millis(200), socket.read(&mut buf)).await;
}

#[tokio::test]
async fn bytes_that_are_not_http2_cost_at_most_one_timeout() {
    let port = raw_server(|mut socket| async move {
        swallow(&mut socket).await;
        let _ = socket
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\nno h2")
            .await;
        let _ = socket
            .write_all(&[0xde, 0xad, 0xbe, 0xef].repeat(256))
            .await;
        // Keep the connection open: the client must notice by itself.
        tokio::time::sleep(Duration::from_secs(60)).await;
    })
    .await
    .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(port).await;
    assert_contained(&answers, took);
    let (err, took) = error_for(port).await;
    assert!(took < TIMEOUT + SLACK, "{took:?}");
    assert!(err.contains("m1"), "{err}");
    // A broken connection is unavailable, as grpc-go reports a broken transport.
    assert!(err.contains("code = Unavailable"), "{err}");
}

#[tokio::test]
async fn a_forbidden_http2_frame_costs_at_most_one_timeout() {
    let port = raw_server(|mut socket| async move {
        swallow(&mut socket).await;
        // An empty SETTINGS, then a DATA frame header on stream 1 claiming 16 MiB - 1, far
        // over the 16 KiB frame size the client allows, followed by some of its bytes.
        let mut bytes = vec![0, 0, 0, 0x4, 0, 0, 0, 0, 0];
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0x0, 0x0, 0, 0, 0, 1]);
        bytes.extend_from_slice(&[0u8; 4096]);
        let _ = socket.write_all(&bytes).await;
        tokio::time::sleep(Duration::from_secs(60)).await;
    })
    .await
    .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(port).await;
    assert_contained(&answers, took);
    let (err, took) = error_for(port).await;
    assert!(took < TIMEOUT + SLACK, "{took:?}");
    assert!(err.contains("m1"), "{err}");
    // A broken connection is unavailable, as grpc-go reports a broken transport.
    assert!(err.contains("code = Unavailable"), "{err}");
}

#[tokio::test]
async fn a_response_claiming_512_mib_is_refused_at_its_length_prefix() {
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let port = h2_server(move |_, mut stream| {
        let counter = counter.clone();
        async move {
            // A frame header claiming 512 MiB, then data for as long as the client reads it.
            let mut header = vec![0u8];
            header.extend_from_slice(&(512u32 * 1024 * 1024).to_be_bytes());
            if !send(&mut stream, header.into()).await {
                return;
            }
            let chunk = Bytes::from(vec![0u8; 64 * 1024]);
            for _ in 0..(600 * 16) {
                if !send(&mut stream, chunk.clone()).await {
                    return;
                }
                counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        }
    })
    .await
    .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(port).await;
    assert_contained(&answers, took);
    let (err, took) = error_for(port).await;
    assert!(took < TIMEOUT + SLACK, "{took:?}");
    assert_eq!(
        err,
        format!(
            "gRPC request cluster(m1) estimator error when calling MaxAvailableReplicas: \
             rpc error: code = ResourceExhausted desc = grpc: received message larger than \
             max ({} vs. {MAX_RESPONSE_SIZE})",
            512 * 1024 * 1024
        )
    );
    // The client stopped reading: flow control let through at most a few windows of the
    // 600 MiB the server had to send, not the message.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let delivered = sent.load(Ordering::Relaxed);
    assert!(
        delivered < 64 * 1024 * 1024,
        "{delivered} bytes were accepted from an oversized response"
    );
}

#[tokio::test]
async fn a_valid_response_over_the_limit_is_refused_and_one_under_it_is_read() {
    let over = h2_server(|_, mut stream| async move {
        let message = padded_response(3, MAX_RESPONSE_SIZE + 1);
        if send(&mut stream, frame(&message)).await {
            let _ = stream.send_trailers(ok_trailers());
        }
    })
    .await
    .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(over).await;
    assert_contained(&answers, took);
    let (err, _) = error_for(over).await;
    assert!(
        err.ends_with(&format!(
            "code = ResourceExhausted desc = grpc: received message larger than max ({} vs. {MAX_RESPONSE_SIZE})",
            MAX_RESPONSE_SIZE + 1
        )),
        "{err}"
    );

    // 3 MiB: big, but under the limit (and over the client's 2 MiB stream window), so it
    // is read whole and its answer used, as grpc-go would.
    let under = h2_server(|_, mut stream| async move {
        let message = padded_response(5, 3 * 1024 * 1024);
        if send(&mut stream, frame(&message)).await {
            let _ = stream.send_trailers(ok_trailers());
        }
    })
    .await
    .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(under).await;
    assert_eq!(
        answers,
        [("m1".to_string(), 5), ("m2".to_string(), HEALTHY)]
    );
    assert!(took < TIMEOUT + SLACK, "{took:?}");
}

#[tokio::test]
async fn a_response_trickled_byte_by_byte_costs_one_timeout() {
    let port = h2_server(|_, mut stream| async move {
        // A plausible 1 KiB answer, one byte every 50 ms: it would take a minute.
        let message = padded_response(9, 1024);
        for byte in frame(&message) {
            if !send(&mut stream, Bytes::copy_from_slice(&[byte])).await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap();
    let (answers, took, metrics) = ask_with_hostile_m1(port).await;
    assert_contained(&answers, took);
    assert!(
        took >= TIMEOUT,
        "the trickle cannot have finished before the timeout ({took:?})"
    );
    assert!(
        metrics.contains(
            r#"karmada_scheduler_estimator_client_requests_total{cluster="m1",method="MaxAvailableReplicas",result="timeout"} 1"#
        ),
        "{metrics}"
    );
    let (err, took) = error_for(port).await;
    assert!(took < TIMEOUT + SLACK, "{took:?}");
    assert_eq!(
        err,
        "gRPC request cluster(m1) estimator error when calling MaxAvailableReplicas: \
         rpc error: code = DeadlineExceeded desc = context deadline exceeded"
    );
}

#[tokio::test]
async fn a_connection_trickling_its_http2_preface_costs_one_timeout() {
    let port = raw_server(|mut socket| async move {
        swallow(&mut socket).await;
        // A valid server preface (an empty SETTINGS), one byte every 200 ms, then nothing.
        for byte in [0u8, 0, 0, 0x4, 0, 0, 0, 0, 0] {
            if socket.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    })
    .await
    .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(port).await;
    assert_contained(&answers, took);
    let (err, took) = error_for(port).await;
    assert!(took < TIMEOUT + SLACK, "{took:?}");
    assert!(err.contains("m1"), "{err}");
}

/// The default `--scheduler-estimator-timeout`, for the tests that show a call ends long
/// before it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// grpc-go's error for a unary answer with a second message.
const ANOTHER_MESSAGE: &str = "gRPC request cluster(m1) estimator error when calling MaxAvailableReplicas: \
     rpc error: code = Internal desc = cardinality violation: expected <EOF> for non \
     server-streaming RPCs, but received another message";

/// CPU time this thread has used (user and system). A `#[tokio::test]` runs its client and
/// its servers on its own thread, apart from the other tests.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("/proc/thread-self/stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // utime and stime, fields 14 and 15 of the whole line, in clock ticks (100 a second on
    // Linux).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

#[tokio::test]
async fn two_messages_fail_the_call_at_once() {
    let server = BrokenEstimator::serve(Broken::Messages(vec![1, 9]))
        .await
        .unwrap();
    let (answers, took, metrics) = ask_with_hostile_m1(server.port).await;
    assert_contained(&answers, took);
    assert!(
        metrics.contains(
            r#"karmada_scheduler_estimator_client_requests_total{cluster="m1",method="MaxAvailableReplicas",result="error"} 1"#
        ),
        "{metrics}"
    );
    let (err, took) = error_within(server.port, DEFAULT_TIMEOUT).await;
    println!("two messages: failed after {took:?}: {err}");
    assert_eq!(err, ANOTHER_MESSAGE);
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test]
async fn an_endless_stream_fails_fast_having_read_little() {
    let server = BrokenEstimator::serve(Broken::Endless(9)).await.unwrap();
    let (answers, took, _) = ask_with_hostile_m1(server.port).await;
    assert_contained(&answers, took);

    let cpu = cpu_time();
    let (err, took) = error_within(server.port, DEFAULT_TIMEOUT).await;
    // The server notices the reset and stops.
    let served = testenv::wait_for("the endless answer cut off", SLACK, || async {
        let served = server.served();
        Ok((served.len() == 2).then_some(served))
    })
    .await
    .unwrap();
    let cpu = cpu_time().saturating_sub(cpu);
    let last = &served[1];
    println!(
        "endless stream: failed after {took:?}; the server sent {} bytes in {:?} (cut off: {}); \
         {cpu:?} of CPU (client and server, 10 ms ticks)",
        last.sent, last.open, last.cut_off
    );
    assert_eq!(err, ANOTHER_MESSAGE);
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(last.cut_off, "{last:?}");
    assert_eq!(last.call.cluster, "m1");
    assert!(
        last.call.user_agent.starts_with("karmada-scheduler-rs/"),
        "{last:?}"
    );
    // What flow control lets out: the client's 2 MiB stream window beyond the two small
    // messages it read (before, the server sent for the whole timeout, as fast as the client
    // decoded).
    assert!(last.sent <= 2 * 1024 * 1024 + 1024, "{last:?}");
    assert!(cpu < Duration::from_millis(500), "{cpu:?}");
}

#[tokio::test]
async fn no_message_with_an_ok_status_fails_the_call() {
    for broken in [Broken::Messages(vec![]), Broken::TrailersOnly] {
        let server = BrokenEstimator::serve(broken.clone()).await.unwrap();
        let (answers, took, _) = ask_with_hostile_m1(server.port).await;
        assert_contained(&answers, took);
        let (err, took) = error_within(server.port, DEFAULT_TIMEOUT).await;
        assert_eq!(
            err,
            "gRPC request cluster(m1) estimator error when calling MaxAvailableReplicas: \
             rpc error: code = Internal desc = cardinality violation: received no response \
             message from non-server-streaming RPC",
            "{broken:?}"
        );
        assert!(took < Duration::from_secs(1), "{broken:?}: {took:?}");
    }
}

#[tokio::test]
async fn one_message_is_still_the_answer() {
    let server = BrokenEstimator::serve(Broken::Messages(vec![5]))
        .await
        .unwrap();
    let (answers, took, _) = ask_with_hostile_m1(server.port).await;
    assert_eq!(
        answers,
        [("m1".to_string(), 5), ("m2".to_string(), HEALTHY)]
    );
    assert!(took < TIMEOUT + SLACK, "{took:?}");
    let served = server.served();
    assert_eq!(served.len(), 1);
    assert!(!served[0].cut_off, "{served:?}");
    assert_eq!(served[0].call.method(), "MaxAvailableReplicas");
}
