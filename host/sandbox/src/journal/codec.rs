//! How journaled results are kept as bytes, and the fingerprints of requests.
//!
//! An `http` result: tag `0`, status (2 bytes), header count (4), each header as name and
//! value (each 4-byte length, then bytes), then the body; or tag `1` and the name of the
//! `wasi:http` error code the guest got. Integers are big-endian. Must not depend on
//! anything but the bytes (a journal written by one host is replayed by another).

use sha2::{Digest, Sha256};

/// A recorded HTTP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HttpResult {
    Response {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
    },
    /// The error code's name (`ConnectionRefused`, ...).
    Error(String),
}

impl HttpResult {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            HttpResult::Response {
                status,
                headers,
                body,
            } => {
                out.push(0);
                out.extend_from_slice(&status.to_be_bytes());
                out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
                for (name, value) in headers {
                    for part in [name.as_bytes(), value.as_slice()] {
                        out.extend_from_slice(&(part.len() as u32).to_be_bytes());
                        out.extend_from_slice(part);
                    }
                }
                out.extend_from_slice(body);
            }
            HttpResult::Error(name) => {
                out.push(1);
                out.extend_from_slice(name.as_bytes());
            }
        }
        out
    }

    /// `None`: not an encoded result (a journal written by something else).
    pub(crate) fn decode(bytes: &[u8]) -> Option<HttpResult> {
        let (&tag, rest) = bytes.split_first()?;
        if tag == 1 {
            return Some(HttpResult::Error(
                String::from_utf8_lossy(rest).into_owned(),
            ));
        }
        let mut reader = Reader(rest);
        let status = u16::from_be_bytes(reader.take(2)?.try_into().ok()?);
        let count = reader.u32()?;
        let mut headers = Vec::new();
        for _ in 0..count {
            let name = reader.chunk()?;
            let value = reader.chunk()?;
            headers.push((String::from_utf8(name.to_vec()).ok()?, value.to_vec()));
        }
        Some(HttpResult::Response {
            status,
            headers,
            body: reader.0.to_vec(),
        })
    }

    /// For people: `200, 12 bytes` or the error code.
    pub(crate) fn summary(&self) -> String {
        match self {
            HttpResult::Response { status, body, .. } => format!("{status}, {} bytes", body.len()),
            HttpResult::Error(name) => format!("error: {name}"),
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn chunk(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// The fingerprint of an HTTP request: `METHOD scheme://authority/path #hash`, the hash
/// (16 hex digits of SHA-256) over the method, the whole URL (query included) and the
/// body. The query stays out of the readable part: it may carry tokens.
pub(crate) fn http_request(method: &str, uri: &http::Uri, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_bytes());
    hash.update([0]);
    hash.update(uri.to_string().as_bytes());
    hash.update([0]);
    hash.update(body);
    let scheme = uri.scheme_str().unwrap_or("");
    let authority = uri.authority().map_or("", |a| a.as_str());
    format!(
        "{method} {scheme}://{authority}{} #{}",
        uri.path(),
        short(&hash.finalize())
    )
}

/// 16 hex digits of `sha256(bytes)`.
pub(crate) fn short_hash(bytes: &[u8]) -> String {
    short(&Sha256::digest(bytes))
}

fn short(digest: &[u8]) -> String {
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_results_round_trip() {
        let response = HttpResult::Response {
            status: 201,
            headers: vec![("content-type".into(), b"text/plain".to_vec())],
            body: b"made".to_vec(),
        };
        assert_eq!(
            HttpResult::decode(&response.encode()),
            Some(response.clone())
        );
        assert_eq!(response.summary(), "201, 4 bytes");
        let error = HttpResult::Error("ConnectionRefused".into());
        assert_eq!(HttpResult::decode(&error.encode()), Some(error));
        assert_eq!(HttpResult::decode(&[0, 1]), None);
    }

    #[test]
    fn request_fingerprints_hide_the_query_and_tell_bodies_apart() {
        let uri: http::Uri = "http://127.0.0.1:8080/step?token=secret".parse().unwrap();
        let a = http_request("POST", &uri, b"{\"step\":1}");
        let b = http_request("POST", &uri, b"{\"step\":2}");
        assert!(a.starts_with("POST http://127.0.0.1:8080/step #"), "{a}");
        assert!(!a.contains("secret"), "{a}");
        assert_ne!(a, b);
    }
}
