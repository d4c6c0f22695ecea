//! The shape of an estimator's answer: every estimator method is unary, so an answer is exactly
//! one gRPC message, then the end of the stream with the status in its trailers. grpc-go holds
//! the reference's calls to that shape; tonic's unary client does not: it keeps the first
//! message and reads and decodes every further one until the trailers, so an estimator sending
//! two messages had its first answer used where the reference fails the call, and one streaming
//! messages held the call (and a core decoding them) until the timeout.
//!
//! Two pieces, used by every call ([`crate::fanout`]) and by the fuzz target alike:
//! [`UnaryBody`] passes on the bytes of one frame and fails at the header of a second one,
//! which also caps what a call reads; [`read_answer`] takes that one message and then the end
//! of the stream and its status. [`answer_from_body`] puts them together over any body.
//! Failures carry grpc-go's codes and words, as the reference's logs and events show them.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame};
use tonic::Status;
use tonic::codec::{Codec as _, Streaming};

use crate::codec::{EncodedCodec, MAX_RESPONSE_SIZE};
use tonic::codegen::StdError as BoxError;

/// Bytes of a gRPC frame header: the compression flag and the message length (big-endian u32).
pub const FRAME_HEADER: usize = 5;

/// The most a unary answer's body passes on: one frame of the largest message accepted, then
/// the header of a second frame, which fails the call.
pub const MAX_ANSWER_BYTES: usize = FRAME_HEADER + MAX_RESPONSE_SIZE + FRAME_HEADER;

/// grpc-go's words for a second message in the answer of a unary call.
pub const ANOTHER_MESSAGE: &str = "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message";

/// grpc-go's words for an answer that ends with an OK status and no message.
pub const NO_MESSAGE: &str =
    "cardinality violation: received no response message from non-server-streaming RPC";

/// grpc-go's words for a stream that ends within a frame.
pub const CUT_SHORT: &str = "unexpected EOF";

/// A status as grpc-go reports a frame longer than the receive limit.
pub fn too_large(len: usize) -> Status {
    Status::resource_exhausted(format!(
        "grpc: received message larger than max ({len} vs. {MAX_RESPONSE_SIZE})"
    ))
}

/// A response body held to one gRPC frame: it passes on the bytes of the first frame and then
/// only the trailers. At the header of a second frame it fails as grpc-go does (a second
/// message; or a frame over [`MAX_RESPONSE_SIZE`], refused at its header as the first frame's
/// would be), without waiting for that frame's bytes or the trailers; a stream ending within
/// a frame fails as cut short. So whatever reads the body reads at most
/// [`MAX_ANSWER_BYTES`], and once it stops the estimator can send no more than a flow-control
/// window beyond that.
pub struct UnaryBody<B> {
    inner: B,
    /// The header of the frame being read (the answer's, then a second one's) and how much
    /// of it has come.
    header: [u8; FRAME_HEADER],
    have: usize,
    /// Payload bytes of the answer's frame still to come, once its header is whole.
    left: Option<usize>,
    /// The answer's frame is whole: any further data byte begins a second frame.
    answered: bool,
    /// The failure to report on the next poll (after the bytes passed on before it).
    pending: Option<Status>,
    /// Failed or ended: nothing more is read from `inner`.
    done: bool,
}

impl<B> UnaryBody<B> {
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            header: [0; FRAME_HEADER],
            have: 0,
            left: None,
            answered: false,
            pending: None,
            done: false,
        }
    }

    /// Between frames (nothing of a frame begun and not finished).
    fn at_boundary(&self) -> bool {
        self.have == 0 && self.left.is_none()
    }

    /// Takes a data chunk; returns the part of it that belongs to the answer's frame. A
    /// failure found in the rest is kept in `pending`.
    fn feed(&mut self, mut data: Bytes) -> Bytes {
        let mut pass = 0;
        let mut rest = &data[..];
        loop {
            if self.left == Some(0) {
                self.answered = true;
                self.left = None;
                self.have = 0;
            }
            if rest.is_empty() {
                break;
            }
            match self.left {
                Some(left) => {
                    let n = left.min(rest.len());
                    pass += n;
                    rest = &rest[n..];
                    self.left = Some(left - n);
                }
                None => {
                    let n = (FRAME_HEADER - self.have).min(rest.len());
                    self.header[self.have..self.have + n].copy_from_slice(&rest[..n]);
                    self.have += n;
                    rest = &rest[n..];
                    if !self.answered {
                        pass += n;
                    }
                    if self.have < FRAME_HEADER {
                        continue;
                    }
                    let [_, a, b, c, d] = self.header;
                    let len = u32::from_be_bytes([a, b, c, d]) as usize;
                    if len > MAX_RESPONSE_SIZE {
                        self.pending = Some(too_large(len));
                        // Not even the header of a refused frame is passed on.
                        if !self.answered {
                            pass -= n;
                        }
                        break;
                    }
                    if self.answered {
                        self.pending = Some(Status::internal(ANOTHER_MESSAGE));
                        break;
                    }
                    self.left = Some(len);
                }
            }
        }
        data.truncate(pass);
        data
    }
}

impl<B> Body for UnaryBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if let Some(status) = this.pending.take() {
                this.done = true;
                return Poll::Ready(Some(Err(Box::new(status))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(e.into())));
                }
                None => {
                    if !this.at_boundary() {
                        this.pending = Some(Status::internal(CUT_SHORT));
                        continue;
                    }
                    this.done = true;
                    return Poll::Ready(None);
                }
            };
            match frame.into_data() {
                Ok(data) => {
                    let pass = this.feed(data);
                    if !pass.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(pass))));
                    }
                }
                // The trailers: the end of the stream, which must not fall within a frame.
                Err(frame) => {
                    if !this.at_boundary() {
                        this.pending = Some(Status::internal(CUT_SHORT));
                        continue;
                    }
                    return Poll::Ready(Some(Ok(frame)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        if self.pending.is_some() {
            false
        } else {
            self.done || (self.at_boundary() && self.inner.is_end_stream())
        }
    }
}

/// Reads a unary answer from its response stream: one message, then the end of the stream,
/// whose status (from the trailers) fails the call unless it is OK. A second message fails
/// the call at once, and so does an OK end without a message, as in grpc-go. Over a
/// [`UnaryBody`] the second message fails at its header, before it is read.
pub async fn read_answer<M>(mut stream: Streaming<M>) -> Result<M, Status> {
    let Some(answer) = stream.message().await? else {
        return Err(Status::internal(NO_MESSAGE));
    };
    match stream.message().await? {
        None => Ok(answer),
        Some(_) => Err(Status::internal(ANOTHER_MESSAGE)),
    }
}

/// The answer an estimator call reads from `body`, the body of a response whose headers were
/// fine (HTTP 200, no status in them): [`UnaryBody`], the decoder and size limit of the calls,
/// then [`read_answer`]. For the fuzz target and the tests, which have a body and no server.
pub async fn answer_from_body<M, B>(body: B) -> Result<M, Status>
where
    M: prost::Message + Default + Send + 'static,
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    let decoder = EncodedCodec::<M>::default().decoder();
    let stream = Streaming::new_response(
        decoder,
        UnaryBody::new(body),
        http::StatusCode::OK,
        None,
        Some(MAX_RESPONSE_SIZE),
    );
    read_answer(stream).await
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use proptest::prelude::*;
    use prost::Message as _;
    use tonic::Code;

    use super::*;
    use crate::pb::messages::MaxAvailableReplicasResponse as Answer;

    /// How the test body ends.
    #[derive(Clone, Copy, Debug)]
    enum End {
        Ok,
        /// `grpc-status: 13`, `grpc-message: estimator failed`.
        Failed,
        /// No trailers at all.
        Bare,
    }

    /// A response body: its chunks, then its trailers; counts the data bytes read from it.
    struct TestBody {
        chunks: VecDeque<Bytes>,
        end: End,
        /// After the chunks, this frame again and again instead of the end.
        endless: Option<Bytes>,
        read: Arc<AtomicUsize>,
    }

    impl TestBody {
        fn new(chunks: Vec<Bytes>, end: End) -> Self {
            Self {
                chunks: chunks.into(),
                end,
                endless: None,
                read: Arc::default(),
            }
        }
    }

    impl Body for TestBody {
        type Data = Bytes;
        type Error = Status;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
            let next = self.chunks.pop_front().or_else(|| self.endless.clone());
            if let Some(chunk) = next {
                self.read.fetch_add(chunk.len(), Ordering::Relaxed);
                return Poll::Ready(Some(Ok(Frame::data(chunk))));
            }
            let trailers = |pairs: &[(&'static str, &'static str)]| {
                let mut map = http::HeaderMap::new();
                for (k, v) in pairs {
                    map.insert(*k, http::HeaderValue::from_static(v));
                }
                Some(Ok(Frame::trailers(map)))
            };
            let end = std::mem::replace(&mut self.end, End::Bare);
            Poll::Ready(match end {
                End::Ok => trailers(&[("grpc-status", "0")]),
                End::Failed => trailers(&[
                    ("grpc-status", "13"),
                    ("grpc-message", "estimator%20failed"),
                ]),
                End::Bare => None,
            })
        }
    }

    fn frame(flag: u8, message: &[u8]) -> Vec<u8> {
        let mut out = vec![flag];
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(message);
        out
    }

    fn answer(n: i32) -> Vec<u8> {
        frame(0, &Answer { max_replicas: n }.encode_to_vec())
    }

    fn read(chunks: Vec<Bytes>, end: End) -> Result<i32, Status> {
        futures::executor::block_on(answer_from_body::<Answer, _>(TestBody::new(chunks, end)))
            .map(|a| a.max_replicas)
    }

    fn whole(bytes: &[u8], end: End) -> Result<i32, Status> {
        read(vec![Bytes::copy_from_slice(bytes)], end)
    }

    fn failure(result: Result<i32, Status>) -> (Code, String) {
        let e = result.expect_err("the answer must fail");
        (e.code(), e.message().to_string())
    }

    #[test]
    fn one_message_is_the_answer() {
        assert_eq!(whole(&answer(7), End::Ok).unwrap(), 7);
        // The default message is an empty frame.
        assert_eq!(whole(&frame(0, &[]), End::Ok).unwrap(), 0);
    }

    #[test]
    fn a_second_message_fails_as_in_grpc_go() {
        let two = [answer(7), answer(3)].concat();
        assert_eq!(
            failure(whole(&two, End::Ok)),
            (Code::Internal, ANOTHER_MESSAGE.to_string())
        );
        // At its header: the rest of it never has to come.
        let header_only = [answer(7), frame(0, &[0; 100])[..FRAME_HEADER].to_vec()].concat();
        assert_eq!(
            failure(whole(&header_only, End::Bare)),
            (Code::Internal, ANOTHER_MESSAGE.to_string())
        );
    }

    #[test]
    fn no_message_with_an_ok_status_fails_as_in_grpc_go() {
        assert_eq!(
            failure(whole(&[], End::Ok)),
            (Code::Internal, NO_MESSAGE.to_string())
        );
        // With a failed status, that status.
        assert_eq!(
            failure(whole(&[], End::Failed)),
            (Code::Internal, "estimator failed".to_string())
        );
        assert_eq!(
            failure(whole(&answer(7), End::Failed)),
            (Code::Internal, "estimator failed".to_string())
        );
    }

    #[test]
    fn frames_cut_short_or_too_large_fail() {
        let cut = (Code::Internal, CUT_SHORT.to_string());
        assert_eq!(failure(whole(&answer(7)[..3], End::Ok)), cut);
        assert_eq!(failure(whole(&answer(7)[..6], End::Ok)), cut);
        // A partial second header, then the trailers: grpc-go reads it as cut short too.
        assert_eq!(
            failure(whole(&[answer(7), vec![0, 0]].concat(), End::Ok)),
            cut
        );
        assert_eq!(
            failure(whole(&[answer(7), vec![0, 0]].concat(), End::Bare)),
            cut
        );

        let huge = MAX_RESPONSE_SIZE + 1;
        let header = |len: usize| {
            let mut h = vec![0];
            h.extend_from_slice(&(len as u32).to_be_bytes());
            h
        };
        let refused = (
            Code::ResourceExhausted,
            format!("grpc: received message larger than max ({huge} vs. {MAX_RESPONSE_SIZE})"),
        );
        assert_eq!(failure(whole(&header(huge), End::Ok)), refused);
        assert_eq!(
            failure(whole(&[answer(7), header(huge)].concat(), End::Ok)),
            refused
        );
    }

    /// After one frame of the largest size, an endless stream of small ones: the body gives
    /// up at the second header, having read about one maximal message.
    #[test]
    fn an_endless_stream_is_read_no_further_than_one_message() {
        let big = {
            // Field 15 (bytes) as padding, which the decoder skips.
            let mut m = Answer { max_replicas: 4 }.encode_to_vec();
            let padding = MAX_RESPONSE_SIZE - m.len() - 1 - 4;
            m.push(0x7a);
            prost::encoding::encode_varint(padding as u64, &mut m);
            m.resize(MAX_RESPONSE_SIZE, 0xab);
            frame(0, &m)
        };
        assert_eq!(big.len(), FRAME_HEADER + MAX_RESPONSE_SIZE);
        let chunks = big.chunks(16 * 1024).map(Bytes::copy_from_slice).collect();
        let mut body = TestBody::new(chunks, End::Ok);
        body.endless = Some(Bytes::from(answer(1)));
        let read = body.read.clone();
        let result = futures::executor::block_on(answer_from_body::<Answer, _>(body));
        assert_eq!(
            failure(result.map(|a| a.max_replicas)),
            (Code::Internal, ANOTHER_MESSAGE.to_string())
        );
        let read = read.load(Ordering::Relaxed);
        assert!(
            read <= MAX_ANSWER_BYTES + answer(1).len(),
            "{read} bytes read"
        );
    }

    /// What the answer must be, as grpc-go reads it (with tonic's words where the decoder or
    /// the missing status speak): the model the property below holds the reading to.
    fn expected(bytes: &[u8], end: End) -> Result<i32, (Code, Option<String>)> {
        let internal = |m: &str| Err((Code::Internal, Some(m.to_string())));
        let header = |at: usize| -> Option<(u8, usize)> {
            let h = bytes.get(at..at + FRAME_HEADER)?;
            Some((h[0], u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize))
        };
        let ended = || match end {
            End::Ok => Ok(()),
            End::Failed => Err((Code::Internal, Some("estimator failed".to_string()))),
            End::Bare => Err((Code::Unknown, None)),
        };
        if bytes.is_empty() {
            ended()?;
            return internal(NO_MESSAGE);
        }
        let Some((flag, len)) = header(0) else {
            return internal(CUT_SHORT);
        };
        if len > MAX_RESPONSE_SIZE {
            return Err((
                Code::ResourceExhausted,
                Some(too_large(len).message().to_string()),
            ));
        }
        if flag != 0 {
            // tonic's words for the compression flag.
            return Err((Code::Internal, None));
        }
        let Some(payload) = bytes.get(FRAME_HEADER..FRAME_HEADER + len) else {
            return internal(CUT_SHORT);
        };
        let Ok(answer) = Answer::decode(payload) else {
            return Err((Code::Internal, None));
        };
        let rest = &bytes[FRAME_HEADER + len..];
        if rest.is_empty() {
            ended()?;
            return Ok(answer.max_replicas);
        }
        match header(FRAME_HEADER + len) {
            None => internal(CUT_SHORT),
            Some((_, len)) if len > MAX_RESPONSE_SIZE => Err((
                Code::ResourceExhausted,
                Some(too_large(len).message().to_string()),
            )),
            Some(_) => internal(ANOTHER_MESSAGE),
        }
    }

    /// Frames of answers, of bytes that may not decode, with flags other than 0, lengths
    /// that lie, cut anywhere.
    fn bodies() -> impl Strategy<Value = Vec<u8>> {
        let message = prop_oneof![
            any::<i32>().prop_map(|n| Answer { max_replicas: n }.encode_to_vec()),
            proptest::collection::vec(any::<u8>(), 0..12),
        ];
        let piece = prop_oneof![
            8 => message.clone().prop_map(|m| frame(0, &m)),
            1 => (0u8..3, message).prop_map(|(f, m)| frame(f, &m)),
            1 => (prop_oneof![any::<u32>(), 0u32..64], proptest::collection::vec(any::<u8>(), 0..8)).prop_map(|(len, tail)| {
                let mut h = vec![0];
                h.extend_from_slice(&len.to_be_bytes());
                h.extend_from_slice(&tail);
                h
            }),
        ];
        (proptest::collection::vec(piece, 0..4), any::<usize>()).prop_map(|(pieces, cut)| {
            let bytes = pieces.concat();
            // Mostly whole; sometimes cut anywhere.
            if cut % 4 == 0 && !bytes.is_empty() {
                bytes[..cut % bytes.len()].to_vec()
            } else {
                bytes
            }
        })
    }

    fn end() -> impl Strategy<Value = End> {
        prop_oneof![6 => Just(End::Ok), 1 => Just(End::Failed), 1 => Just(End::Bare)]
    }

    proptest! {
        /// However the bytes are split into chunks, the answer is the model's: an answer only
        /// for exactly one well-formed message and an OK status, and a failure for a second
        /// message whatever follows it.
        #[test]
        fn any_chunking_reads_as_the_model(
            bytes in bodies(),
            end in end(),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            at.extend([0, bytes.len()]);
            at.sort_unstable();
            at.dedup();
            let chunks = at
                .windows(2)
                .map(|w| Bytes::copy_from_slice(&bytes[w[0]..w[1]]))
                .collect();
            let got = read(chunks, end).map_err(|e| (e.code(), e.message().to_string()));
            match (expected(&bytes, end), got) {
                (Ok(n), Ok(m)) => prop_assert_eq!(n, m),
                (Err((code, words)), Err((got_code, got_words))) => {
                    prop_assert_eq!(code, got_code, "{}", got_words);
                    if let Some(words) = words {
                        prop_assert_eq!(words, got_words);
                    }
                }
                (want, got) => prop_assert!(false, "expected {:?}, got {:?}", want, got),
            }
        }
    }
}
