//! The codec of the estimator protocol: prost encoding with buffers sized for its messages.
//!
//! tonic's default codec allocates 8 KiB to encode and 8 KiB to decode every call, whatever
//! the message. An estimator request is a few hundred bytes and its answer a few, and one
//! scheduling cycle at 1,000 clusters sends hundreds of calls at once (one per candidate
//! cluster), so with the defaults a few concurrent cycles hold tens of megabytes of mostly
//! empty buffers and spend their time allocating them. The buffers still grow for a larger
//! message; the wire format is unchanged.

use std::marker::PhantomData;

use bytes::{BufMut as _, Bytes};
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic_prost::{ProstDecoder, ProstEncoder};

/// Initial size of a call's encode and decode buffers (they grow by this step).
pub const BUFFER_SIZE: usize = 512;
/// Largest response message a call accepts: 4 MiB, the receive limit grpc-go applies by
/// default (the reference sets none of its own). An answer is one varint, a few bytes; a
/// response whose length prefix claims more than this is refused before any of it is
/// buffered, so a broken or hostile estimator costs at most this much memory per call.
pub const MAX_RESPONSE_SIZE: usize = 4 * 1024 * 1024;
/// tonic's default point at which a large encode yields to the runtime.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// Prost encoding with [`BUFFER_SIZE`] buffers; used by the generated client and server.
#[derive(Debug)]
pub struct EstimatorCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for EstimatorCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for EstimatorCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::new(BufferSettings::new(BUFFER_SIZE, YIELD_THRESHOLD))
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::new(BufferSettings::new(BUFFER_SIZE, YIELD_THRESHOLD))
    }
}

/// A request encoded once per fan-out and sent to every cluster: the shared fields' bytes
/// (the template, encoded once) followed by this cluster's own fields (its name and the
/// workloads assumed on it).
///
/// Protobuf decoders merge concatenated encodings of a message (a singular field seen later
/// wins, repeated fields append), and the template carries neither of the cluster's own
/// fields, so the bytes decode to the same message as the template with those fields set:
/// what the estimator reads is unchanged. What it saves is a deep clone and a full encoding
/// of the template per cluster (hundreds per cycle at 1,000 clusters).
#[derive(Clone, Debug)]
pub struct Encoded {
    shared: Bytes,
    own: Vec<u8>,
}

impl Encoded {
    /// `shared`: the template's encoding; `own`: the encoding of a message holding only
    /// this cluster's fields.
    pub fn new(shared: Bytes, own: Vec<u8>) -> Self {
        Self { shared, own }
    }

    /// Length on the wire (without gRPC framing).
    pub fn len(&self) -> usize {
        self.shared.len() + self.own.len()
    }

    /// Whether both parts are empty (a message with every field at its default).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes as sent.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.shared);
        v.extend_from_slice(&self.own);
        v
    }
}

/// Writes an [`Encoded`] as it is.
#[derive(Debug, Default)]
pub struct EncodedEncoder;

impl Encoder for EncodedEncoder {
    type Item = Encoded;
    type Error = Status;

    fn encode(&mut self, item: Encoded, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.reserve(item.len());
        dst.put_slice(&item.shared);
        dst.put_slice(&item.own);
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(BUFFER_SIZE, YIELD_THRESHOLD)
    }
}

/// Client codec sending an [`Encoded`] request and decoding a prost response `U` with
/// [`BUFFER_SIZE`] buffers.
#[derive(Debug)]
pub struct EncodedCodec<U>(PhantomData<U>);

impl<U> Default for EncodedCodec<U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<U> Codec for EncodedCodec<U>
where
    U: prost::Message + Default + Send + 'static,
{
    type Encode = Encoded;
    type Decode = U;
    type Encoder = EncodedEncoder;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        EncodedEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::new(BufferSettings::new(BUFFER_SIZE, YIELD_THRESHOLD))
    }
}
