//! Reading an estimator's answer as every call reads it: the HTTP/2 response body (gRPC
//! length-prefixed frames, delivered in arbitrary chunks, then trailers) through
//! `estimator_client::unary::answer_from_body` (the body held to one frame, tonic's decoder with
//! our codec and size limit `MAX_RESPONSE_SIZE`, then one message and the end of the stream),
//! into each of the three response messages.
//!
//! Input: a control byte (which response type, how the body is chunked, which trailers),
//! then the body bytes.
//!
//! Checks besides "no panic" and bounded allocation (hack/fuzz.sh runs this target with a
//! malloc limit far below what a hostile length prefix claims), the shape of a unary answer:
//! an answer only for a body of exactly one well-formed frame with an OK status, and then what
//! prost decodes from its payload; a second frame always fails, at its header, with grpc-go's
//! words; no message with an OK status fails with grpc-go's words; a frame longer than the limit
//! is refused with the size error grpc-go would give; every failure prints as grpc-go prints a
//! status; decoded messages survive an encode/decode round trip.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use std::collections::VecDeque;
use std::fmt::Debug;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use estimator_client::codec::MAX_RESPONSE_SIZE;
use estimator_client::fanout::{as_grpc_go, format_status};
use estimator_client::pb::messages as pb;
use estimator_client::unary::{self, answer_from_body};
use http_body::Frame;
use libfuzzer_sys::fuzz_target;
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

/// The trailers `body` ends with: none, OK, a failure, or an unreadable status.
fn ends_ok(control: u8) -> bool {
    (control >> 5) & 0x3 == 1
}

/// The header of the frame at `at`: its flag and length.
fn header(payload: &[u8], at: usize) -> Option<(u8, usize)> {
    let h = payload.get(at..at + 5)?;
    Some((h[0], u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize))
}

fn check<M>(control: u8, payload: &[u8])
where
    M: prost::Message + Default + PartialEq + Debug + Send + Sync + 'static,
{
    // The message type alone, as prost reads it.
    if let Ok(m) = M::decode(payload) {
        assert_eq!(M::decode(m.encode_to_vec().as_slice()).as_ref(), Ok(&m));
    }

    let result = futures::executor::block_on(answer_from_body::<M, _>(body(control, payload)));
    if let Err(e) = &result {
        let shown = format_status(&as_grpc_go(e.clone()));
        assert!(shown.starts_with("rpc error: code = "), "{shown}");
    }

    let first = header(payload, 0);
    // The payload of a first frame that is whole and within the limit.
    let whole = first.and_then(|(flag, len)| {
        (len <= MAX_RESPONSE_SIZE)
            .then(|| payload.get(5..5 + len).map(|p| (flag, p)))
            .flatten()
    });
    let well_formed = whole.and_then(|(flag, p)| (flag == 0).then(|| M::decode(p).ok()).flatten());

    match &result {
        Ok(m) => {
            // Only exactly one well-formed frame with an OK status is an answer.
            assert!(ends_ok(control), "an answer without an OK status");
            let (_, p) = whole.expect("an answer has a whole frame");
            assert_eq!(
                payload.len(),
                5 + p.len(),
                "an answer with bytes after its frame"
            );
            assert_eq!(well_formed.as_ref(), Some(m));
            assert_eq!(M::decode(m.encode_to_vec().as_slice()).as_ref(), Ok(m));
        }
        Err(e) => {
            if let (true, Some(expected), Some((_, p))) = (ends_ok(control), &well_formed, whole)
                && payload.len() == 5 + p.len()
            {
                panic!(
                    "exactly one well-formed frame ({expected:?}) and an OK status failed: {e:?}"
                );
            }
        }
    }

    if payload.is_empty() && ends_ok(control) {
        let e = result.as_ref().expect_err("no message is no answer");
        assert_eq!(e.code(), Code::Internal);
        assert_eq!(e.message(), unary::NO_MESSAGE);
    }
    if let Some((_, len)) = first
        && len > MAX_RESPONSE_SIZE
    {
        // Refused at the length prefix, with grpc-go's code and words.
        let e = as_grpc_go(
            result
                .as_ref()
                .expect_err("an oversized frame is refused")
                .clone(),
        );
        assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
        assert_eq!(
            e.message(),
            format!("grpc: received message larger than max ({len} vs. {MAX_RESPONSE_SIZE})")
        );
    }
    // A second frame always fails; after a well-formed first one, at its header, as grpc-go
    // fails it (a second message, or one over the limit), whatever the trailers.
    if let Some((_, p)) = whole
        && let Some((_, second)) = header(payload, 5 + p.len())
    {
        let e = result
            .as_ref()
            .expect_err("a second message fails the call");
        if well_formed.is_some() {
            if second > MAX_RESPONSE_SIZE {
                assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
            } else {
                assert_eq!(e.code(), Code::Internal, "{e:?}");
                assert_eq!(e.message(), unary::ANOTHER_MESSAGE);
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
