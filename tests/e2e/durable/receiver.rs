//! A real HTTP receiver on 127.0.0.1 for the durable tests: it records every request's
//! step (`{"step": i}` in the body), its `signal` and `Idempotency-Key` header before answering
//! `200 step-i`, and can hold its answer to the first request of one step for a while
//! (so a test kills the worker while that request is in flight), answer a step's first
//! request with a 500, or answer a step's first requests as a busy API does (a 429 or 503,
//! with or without `Retry-After`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the receiver got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub step: u64,
    pub key: Option<String>,
    /// The body's `signal` (what `durable-steps` awaited before this step), if any.
    pub signal: Option<serde_json::Value>,
    /// When its headers and body had arrived.
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Rules {
    /// Hold the first answer to this step this long.
    hold: Option<(u64, Duration)>,
    /// Answer the first request of this step with a 500.
    fail_once: Option<u64>,
    /// Answer the first requests of a step as a busy API.
    busy: Option<Busy>,
}

/// How a busy step answers: its first `times` requests get `status` (e.g. `429 Too Many
/// Requests`) and `retry-after: VALUE` if set.
#[derive(Clone)]
pub struct Busy {
    pub step: u64,
    pub times: usize,
    pub status: &'static str,
    pub retry_after: Option<String>,
}

#[derive(Clone)]
pub struct Receiver {
    pub origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    rules: Arc<Mutex<Rules>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let receiver = Receiver {
            origin: format!("http://{}", listener.local_addr().unwrap()),
            seen: Arc::default(),
            rules: Arc::default(),
        };
        let serving = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let serving = serving.clone();
                std::thread::spawn(move || serving.answer(stream));
            }
        });
        receiver
    }

    /// Holds the answer to the first request of `step` for `length`.
    pub fn hold(&self, step: u64, length: Duration) {
        self.rules.lock().unwrap().hold = Some((step, length));
    }

    /// Answers the first request of `step` with a 500.
    pub fn fail_once(&self, step: u64) {
        self.rules.lock().unwrap().fail_once = Some(step);
    }

    /// The URLs of steps `1..=n`.
    /// Answers the first requests of a step as a busy API (see [`Busy`]).
    pub fn busy(&self, busy: Busy) {
        self.rules.lock().unwrap().busy = Some(busy);
    }

    /// When each request for `step` arrived, in order.
    pub fn arrivals(&self, step: u64) -> Vec<std::time::Instant> {
        self.seen()
            .iter()
            .filter(|s| s.step == step)
            .map(|s| s.at)
            .collect()
    }

    pub fn urls(&self, n: u64) -> Vec<String> {
        (1..=n)
            .map(|i| format!("{}/step/{i}", self.origin))
            .collect()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn steps(&self) -> Vec<u64> {
        self.seen().iter().map(|s| s.step).collect()
    }

    fn answer(&self, stream: std::net::TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0usize;
        let mut key = None;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "idempotency-key" => key = Some(value.trim().to_owned()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
        let step = body["step"].as_u64().unwrap_or(0);
        let signal = body.get("signal").cloned();
        let before = {
            let mut seen = self.seen.lock().unwrap();
            let before = seen.iter().filter(|s| s.step == step).count();
            seen.push(Seen {
                step,
                key,
                signal,
                at: std::time::Instant::now(),
            });
            before
        };
        let first = before == 0;
        let (hold, fail, busy) = {
            let rules = self.rules.lock().unwrap();
            let hold = rules
                .hold
                .filter(|(s, _)| first && *s == step)
                .map(|(_, d)| d);
            let busy = (rules.busy.clone()).filter(|b| b.step == step && before < b.times);
            (hold, first && rules.fail_once == Some(step), busy)
        };
        if let Some(length) = hold {
            std::thread::sleep(length);
        }
        let mut extra = String::new();
        let (status, text) = if let Some(busy) = busy {
            if let Some(value) = &busy.retry_after {
                extra = format!("retry-after: {value}\r\n");
            }
            (busy.status, format!("step-{step} busy"))
        } else if fail {
            ("500 Internal Server Error", format!("step-{step} failed"))
        } else {
            ("200 OK", format!("step-{step}"))
        };
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{text}",
            text.len()
        );
    }
}
