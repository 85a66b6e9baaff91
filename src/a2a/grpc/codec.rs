//! The codec of the generated A2A services (`src/build.rs` names it):
//! prost's wire format, with tonic-prost's encoder, and a decoder that
//! says a message that does not decode is the sender's error. tonic-prost
//! answers it with INTERNAL, which the gateway keeps for its own bugs; a
//! request that is not the RPC's message is INVALID_ARGUMENT. The kind is
//! read from prost's own result, never from an error's text.

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::ProstEncoder;

/// Encodes `T` and decodes `U`, as the generated code asks.
pub struct ProstCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for ProstCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for ProstCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::new(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder(PhantomData)
    }
}

/// Decodes one whole message (tonic has read its frame).
pub struct ProstDecoder<U>(PhantomData<U>);

impl<U: Message + Default> Decoder for ProstDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        decode(buf).map(Some)
    }
}

/// One message, or INVALID_ARGUMENT naming the message it is not.
pub fn decode<U: Message + Default>(buf: impl bytes::Buf) -> Result<U, Status> {
    U::decode(buf).map_err(|e| {
        let what = std::any::type_name::<U>()
            .rsplit("::")
            .next()
            .unwrap_or("message");
        Status::invalid_argument(format!("the message is not a valid {what}: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::grpc::v1::SendMessageRequest;

    #[test]
    fn a_message_that_does_not_decode_is_invalid_argument_naming_its_type() {
        let status = decode::<SendMessageRequest>(&b"\xff\xff\xff"[..]).unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(
            status.message().contains("not a valid SendMessageRequest"),
            "{status:?}"
        );
    }
}
