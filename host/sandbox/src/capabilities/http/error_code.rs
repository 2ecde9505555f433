//! `wasi:http/types.http-error-code`, the function a guest calls to learn why a body
//! stream failed, linked over wasmtime-wasi-http's own so that every failure of a body
//! the egress hooks hand to a guest arrives as its `error-code`.
//!
//! wasmtime-wasi-http 48 keeps a failed body's error as its embedder error type
//! (`wasmtime_wasi_http::Error`, what `hooks::to_wasi` produces) and its
//! `http-error-code` only recognises the `error-code` type itself, so a response body cut
//! at its cap (or by a read timeout) reached the guest as "no code" — `internal-error` in
//! every SDK. This module answers for both types, mapping the embedder's one to one. It
//! must not decide anything: the code is whatever the egress layer chose.

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::WasiView;
use wasmtime_wasi_http::Error;
use wasmtime_wasi_http::p2::bindings::http::types::{
    DnsErrorPayload, ErrorCode, FieldSizePayload, IoError, TlsAlertReceivedPayload,
};

/// The instance wasmtime-wasi-http 48 links `wasi:http/types` as (its WIT's version;
/// guests importing any 0.2.x are served by it).
const TYPES: &str = "wasi:http/types@0.2.12";

/// Replaces `http-error-code` in `linker` (after wasmtime-wasi-http's interfaces were
/// added).
pub(crate) fn link<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = linker.instance(TYPES)?.func_wrap(
        "http-error-code",
        |mut store, (error,): (Resource<IoError>,)| {
            let table = store.data_mut().ctx().table;
            Ok((code_of(table.get(&error)?),))
        },
    );
    linker.allow_shadowing(false);
    linked
}

/// The `error-code` a failed stream's error stands for, if it is an HTTP error.
pub(crate) fn code_of(error: &IoError) -> Option<ErrorCode> {
    if let Some(code) = error.downcast_ref::<ErrorCode>() {
        return Some(code.clone());
    }
    error.downcast_ref::<Error>().map(to_code)
}

/// wasmtime-wasi-http's embedder error as the `error-code` it stands for, one to one.
fn to_code(error: &Error) -> ErrorCode {
    let field = |name: &Option<String>, size: &Option<u32>| FieldSizePayload {
        field_name: name.clone(),
        field_size: *size,
    };
    match error {
        Error::HttpRequestBodySize(n) => ErrorCode::HttpRequestBodySize(*n),
        Error::HttpResponseBodySize(n) => ErrorCode::HttpResponseBodySize(*n),
        Error::DnsTimeout => ErrorCode::DnsTimeout,
        Error::DnsError { rcode, info_code } => ErrorCode::DnsError(DnsErrorPayload {
            rcode: rcode.clone(),
            info_code: *info_code,
        }),
        Error::DestinationNotFound => ErrorCode::DestinationNotFound,
        Error::DestinationUnavailable => ErrorCode::DestinationUnavailable,
        Error::DestinationIpProhibited => ErrorCode::DestinationIpProhibited,
        Error::DestinationIpUnroutable => ErrorCode::DestinationIpUnroutable,
        Error::ConnectionRefused => ErrorCode::ConnectionRefused,
        Error::ConnectionTerminated => ErrorCode::ConnectionTerminated,
        Error::ConnectionTimeout => ErrorCode::ConnectionTimeout,
        Error::ConnectionReadTimeout => ErrorCode::ConnectionReadTimeout,
        Error::ConnectionWriteTimeout => ErrorCode::ConnectionWriteTimeout,
        Error::ConnectionLimitReached => ErrorCode::ConnectionLimitReached,
        Error::TlsProtocolError => ErrorCode::TlsProtocolError,
        Error::TlsCertificateError => ErrorCode::TlsCertificateError,
        Error::TlsAlertReceived {
            alert_id,
            alert_message,
        } => ErrorCode::TlsAlertReceived(TlsAlertReceivedPayload {
            alert_id: *alert_id,
            alert_message: alert_message.clone(),
        }),
        Error::HttpRequestDenied => ErrorCode::HttpRequestDenied,
        Error::HttpRequestLengthRequired => ErrorCode::HttpRequestLengthRequired,
        Error::HttpRequestMethodInvalid => ErrorCode::HttpRequestMethodInvalid,
        Error::HttpRequestUriInvalid => ErrorCode::HttpRequestUriInvalid,
        Error::HttpRequestUriTooLong => ErrorCode::HttpRequestUriTooLong,
        Error::HttpRequestHeaderSectionSize(n) => ErrorCode::HttpRequestHeaderSectionSize(*n),
        Error::HttpRequestHeaderSize {
            field_name,
            field_size,
        } => ErrorCode::HttpRequestHeaderSize(Some(field(field_name, field_size))),
        Error::HttpRequestTrailerSectionSize(n) => ErrorCode::HttpRequestTrailerSectionSize(*n),
        Error::HttpRequestTrailerSize {
            field_name,
            field_size,
        } => ErrorCode::HttpRequestTrailerSize(field(field_name, field_size)),
        Error::HttpResponseIncomplete => ErrorCode::HttpResponseIncomplete,
        Error::HttpResponseHeaderSectionSize(n) => ErrorCode::HttpResponseHeaderSectionSize(*n),
        Error::HttpResponseHeaderSize {
            field_name,
            field_size,
        } => ErrorCode::HttpResponseHeaderSize(field(field_name, field_size)),
        Error::HttpResponseTrailerSectionSize(n) => ErrorCode::HttpResponseTrailerSectionSize(*n),
        Error::HttpResponseTrailerSize {
            field_name,
            field_size,
        } => ErrorCode::HttpResponseTrailerSize(field(field_name, field_size)),
        Error::HttpResponseTransferCoding(c) => ErrorCode::HttpResponseTransferCoding(c.clone()),
        Error::HttpResponseContentCoding(c) => ErrorCode::HttpResponseContentCoding(c.clone()),
        Error::HttpResponseTimeout => ErrorCode::HttpResponseTimeout,
        Error::HttpUpgradeFailed => ErrorCode::HttpUpgradeFailed,
        Error::HttpProtocolError => ErrorCode::HttpProtocolError,
        Error::LoopDetected => ErrorCode::LoopDetected,
        Error::ConfigurationError => ErrorCode::ConfigurationError,
        Error::InternalError(m) => ErrorCode::InternalError(m.clone()),
        // A hyper, connect or TLS error: the hooks never give one to a guest (the
        // egress connector maps each to its code first), so reaching here is a bug.
        _ => ErrorCode::InternalError(Some(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_error_of_the_hooks_is_read_as_its_code() {
        // What `HostIncomingBodyStream` stores for a failed frame: the embedder error.
        let stored: IoError = Error::HttpResponseBodySize(Some(1024)).into();
        assert!(matches!(
            code_of(&stored),
            Some(ErrorCode::HttpResponseBodySize(Some(1024)))
        ));
        let stored: IoError = Error::ConnectionReadTimeout.into();
        assert!(matches!(
            code_of(&stored),
            Some(ErrorCode::ConnectionReadTimeout)
        ));
        // The code itself (what wasmtime stores for a content-length mismatch) still is.
        let stored: IoError = ErrorCode::HttpRequestBodySize(Some(7)).into();
        assert!(matches!(
            code_of(&stored),
            Some(ErrorCode::HttpRequestBodySize(Some(7)))
        ));
        // Anything else is not an HTTP error.
        let stored = IoError::msg("broken pipe");
        assert!(code_of(&stored).is_none());
    }
}
