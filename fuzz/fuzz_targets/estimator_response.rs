//! Decoding an estimator's answer as the client does: the HTTP/2 response body (gRPC
//! length-prefixed frames, delivered in arbitrary chunks, then trailers) through tonic's
//! decoder with our codec (`estimator_client::codec::EstimatorCodec`) and our size limit
//! (`MAX_RESPONSE_SIZE`), into each of the three response messages.
//!
//! Input: a control byte (which response type, how the body is chunked, which trailers),
//! then the body bytes.
//!
//! Checks besides "no panic" and bounded allocation (hack/fuzz.sh runs this target with a
//! malloc limit far below what a hostile length prefix claims): a body that is exactly one
//! well-formed frame decodes to what prost decodes from its payload; a frame longer than the
//! limit is refused with the size error grpc-go would give; decoded messages survive an
//! encode/decode round trip.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use std::collections::VecDeque;
use std::fmt::Debug;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use estimator_client::codec::{EstimatorCodec, MAX_RESPONSE_SIZE};
use estimator_client::fanout::{as_grpc_go, format_status};
use estimator_client::pb::messages as pb;
use http_body::Frame;
use libfuzzer_sys::fuzz_target;
use tonic::codec::{Codec, Streaming};
use tonic::{Code, Status};

/// A response body that hands out its chunks, then its trailers.
struct Body {
    chunks: VecDeque<Bytes>,
    trailers: Option<http::HeaderMap>,
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }
}

fn body(control: u8, payload: &[u8]) -> Body {
    let chunk = match (control >> 2) & 0x7 {
        0 => payload.len().max(1),
        1 => 1,
        2 => 2,
        3 => 5,
        4 => 7,
        5 => 64,
        6 => 512,
        _ => 4096,
    };
    let chunks = payload
        .chunks(chunk)
        .map(Bytes::copy_from_slice)
        .collect::<VecDeque<_>>();
    let trailers = match (control >> 5) & 0x3 {
        0 => None,
        1 => Some(trailer_map(&[("grpc-status", "0")])),
        2 => Some(trailer_map(&[
            ("grpc-status", "13"),
            ("grpc-message", "estimator%20failed"),
        ])),
        _ => Some(trailer_map(&[
            ("grpc-status", "x"),
            ("grpc-message", "%ZZ"),
        ])),
    };
    Body { chunks, trailers }
}

fn trailer_map(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (k, v) in pairs {
        map.insert(*k, http::HeaderValue::from_static(v));
    }
    map
}

/// Every message of the body, then the trailers, as a unary call reads them; the messages
/// and the first error.
fn drain<M>(control: u8, payload: &[u8]) -> (Vec<M>, Option<Status>)
where
    M: prost::Message + Default + Send + Sync + 'static,
{
    let mut codec = EstimatorCodec::<pb::MaxAvailableReplicasRequest, M>::default();
    let mut stream: Streaming<M> = Streaming::new_response(
        codec.decoder(),
        body(control, payload),
        http::StatusCode::OK,
        None,
        Some(MAX_RESPONSE_SIZE),
    );
    futures::executor::block_on(async {
        let mut messages = Vec::new();
        loop {
            match stream.message().await {
                Ok(Some(m)) => messages.push(m),
                Ok(None) => break,
                Err(e) => return (messages, Some(e)),
            }
        }
        match stream.trailers().await {
            Ok(_) => (messages, None),
            Err(e) => (messages, Some(e)),
        }
    })
}

fn check<M>(control: u8, payload: &[u8])
where
    M: prost::Message + Default + PartialEq + Debug + Send + Sync + 'static,
{
    // The message type alone, as prost reads it.
    if let Ok(m) = M::decode(payload) {
        assert_eq!(M::decode(m.encode_to_vec().as_slice()).as_ref(), Ok(&m));
    }

    let (messages, error) = drain::<M>(control, payload);
    // At most one message per 5-byte frame header.
    assert!(messages.len() <= payload.len() / 5);
    for m in &messages {
        assert_eq!(M::decode(m.encode_to_vec().as_slice()).as_ref(), Ok(m));
    }
    if let Some(e) = &error {
        let shown = format_status(&as_grpc_go(e.clone()));
        assert!(shown.starts_with("rpc error: code = "), "{shown}");
    }

    if payload.len() >= 5 && payload[0] == 0 {
        let len = u32::from_be_bytes([payload[1], payload[2], payload[3], payload[4]]) as usize;
        if len > MAX_RESPONSE_SIZE {
            // Refused at the length prefix, with grpc-go's code and words.
            let e = error.expect("an oversized frame is refused");
            assert!(messages.is_empty());
            let e = as_grpc_go(e);
            assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
            assert_eq!(
                e.message(),
                format!("grpc: received message larger than max ({len} vs. {MAX_RESPONSE_SIZE})")
            );
        } else if payload.len() == 5 + len {
            // Exactly one whole frame: the stream yields what prost makes of the payload.
            match M::decode(&payload[5..]) {
                Ok(expected) => assert_eq!(messages.first(), Some(&expected)),
                Err(_) => {
                    assert!(messages.is_empty());
                    assert!(error.is_some(), "an undecodable frame passed");
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, payload)) = data.split_first() else {
        return;
    };
    match control & 0x3 {
        0 => check::<pb::MaxAvailableReplicasResponse>(control, payload),
        1 => check::<pb::MaxAvailableComponentSetsResponse>(control, payload),
        _ => check::<pb::UnschedulableReplicasResponse>(control, payload),
    }
});
