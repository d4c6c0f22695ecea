//! The codec of the estimator protocol: prost encoding with buffers sized for its messages.
//!
//! tonic's default codec allocates 8 KiB to encode and 8 KiB to decode every call, whatever
//! the message. An estimator request is a few hundred bytes and its answer a few, and one
//! scheduling cycle at 1,000 clusters sends hundreds of calls at once (one per candidate
//! cluster), so with the defaults a few concurrent cycles hold tens of megabytes of mostly
//! empty buffers and spend their time allocating them. The buffers still grow for a larger
//! message; the wire format is unchanged.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
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
