//! Recorded HTTP (`sluice test`): an attempt whose [`HttpGrant`] carries a
//! [`RecordedHttp`] has its outbound requests answered from that table, never from the
//! network. A request matches a recorded response with the same method (ASCII case
//! ignored) and URL (scheme and authority case ignored, path and query exact, a missing
//! path read as `/`); each recorded response answers **one** request, the first unused
//! one in the table's order, so repeated identical requests get the matching responses
//! one after the other. A request with no unused match is refused with
//! `HTTP-request-denied` (a failed request to the guest), one `WARN` log line and an entry
//! in `HttpCalls::unmatched` naming its method and URL.
//!
//! The answer is built as a durable job's replayed request is (`journaled::answer`, from
//! the journal's `HttpResult`). The request body is read whole before the answer (as a
//! journaled request's is) and counted, not checked.
//!
//! Must not: open a socket or touch the connector (none is handed to an attempt in this
//! mode), or read the grant's allow list (nothing leaves, so nothing is checked).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http_body_util::BodyExt;
use wasmtime_wasi_http::WasiBody;

use super::calls::{
    RecordedHttp, RecordedResponse, SendFuture, Shared, record, request_key, url_key,
};
use super::journaled;
use crate::journal::codec::HttpResult;

/// Which recorded responses one attempt has used.
#[derive(Debug)]
pub(super) struct Replay {
    recorded: Arc<RecordedHttp>,
    keys: Vec<Option<String>>,
    used: Vec<bool>,
}

impl Replay {
    pub(super) fn new(recorded: Arc<RecordedHttp>) -> Replay {
        let keys = recorded
            .responses
            .iter()
            .map(|r| {
                url_key(&r.url)
                    .ok()
                    .map(|url| format!("{} {url}", r.method.to_ascii_uppercase()))
            })
            .collect();
        let used = vec![false; recorded.responses.len()];
        Replay {
            recorded,
            keys,
            used,
        }
    }

    /// The first unused response recorded for `key`, now used.
    fn take(&mut self, key: &str) -> Option<&RecordedResponse> {
        let i = (0..self.keys.len())
            .find(|&i| !self.used[i] && self.keys[i].as_deref() == Some(key))?;
        self.used[i] = true;
        Some(&self.recorded.responses[i])
    }
}

/// Answers `request` from `replay`; `Err(key)` when nothing recorded matches it (the
/// caller refuses it, naming `key`).
pub(super) fn send(
    replay: &mut Replay,
    shared: Arc<Shared>,
    request: http::Request<WasiBody>,
) -> Result<SendFuture, String> {
    let key = request_key(request.method().as_str(), request.uri());
    let Some(recorded) = replay.take(&key) else {
        return Err(key);
    };
    let result = HttpResult::Response {
        status: recorded.status,
        headers: recorded
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
            .collect(),
        body: recorded.body.clone(),
    };
    Ok(Box::new(async move {
        // The guest writes its body after `handle`: read it whole, as a real send would.
        let sent = request
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes().len() as u64)
            .unwrap_or(0);
        shared.bytes_out.fetch_add(sent, Ordering::Relaxed);
        if let HttpResult::Response { body, .. } = &result {
            shared
                .bytes_in
                .fetch_add(body.len() as u64, Ordering::Relaxed);
        }
        record(&shared, "ok", Duration::ZERO);
        journaled::answer(result)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(method: &str, url: &str, status: u16) -> RecordedResponse {
        RecordedResponse {
            method: method.into(),
            url: url.into(),
            status,
            headers: vec![],
            body: vec![],
        }
    }

    #[test]
    fn each_response_answers_one_request_in_order() {
        let mut replay = Replay::new(Arc::new(RecordedHttp {
            responses: vec![
                response("get", "HTTP://API.example/x", 503),
                response("POST", "http://api.example/x", 201),
                response("GET", "http://api.example/x", 200),
            ],
        }));
        let uri: http::Uri = "http://api.example/x".parse().unwrap();
        let key = request_key("GET", &uri);
        assert_eq!(key, "GET http://api.example/x");
        assert_eq!(replay.take(&key).unwrap().status, 503);
        assert_eq!(replay.take(&key).unwrap().status, 200);
        assert!(replay.take(&key).is_none());
        let root: http::Uri = "http://api.example".parse().unwrap();
        assert_eq!(request_key("GET", &root), "GET http://api.example/");
    }

    #[test]
    fn a_bad_recording_says_why() {
        assert!(response("GET", "http://a/x", 200).check().is_ok());
        assert!(
            response("GET", "/x", 200)
                .check()
                .unwrap_err()
                .contains("absolute")
        );
        assert!(response("GET", "http://a/x", 1000).check().is_err());
        assert!(response("GE T", "http://a/x", 200).check().is_err());
    }
}
