//! A loopback OTLP receiver for the exporter tests: a tokio `TcpListener` on
//! 127.0.0.1:0 that reads each HTTP/1.1 request whole and answers with a fixed status
//! (or never answers), handing every request to the test.

use std::collections::HashMap;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request the collector received.
#[derive(Debug)]
pub(crate) struct Received {
    pub method: String,
    pub path: String,
    /// Lowercase names.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

pub(crate) struct Collector {
    /// `http://127.0.0.1:PORT` (no path).
    pub base: String,
    pub requests: mpsc::UnboundedReceiver<Received>,
}

impl Collector {
    /// Answers every request with `status`; `None`: reads the request and never answers.
    pub async fn start(status: Option<u16>) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, requests) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let tx = tx.clone();
                tokio::spawn(serve(stream, status, tx));
            }
        });
        Collector { base, requests }
    }

    /// The next request, waiting at most 10 s.
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(std::time::Duration::from_secs(10), self.requests.recv())
            .await
            .expect("a request within 10 s")
            .expect("the collector is running")
    }
}

async fn serve(mut stream: TcpStream, status: Option<u16>, tx: mpsc::UnboundedSender<Received>) {
    loop {
        let Some(request) = read_request(&mut stream).await else {
            return;
        };
        let _ = tx.send(request);
        let Some(status) = status else {
            // Hold the connection open without answering.
            std::future::pending::<()>().await;
            return;
        };
        let answer = format!("HTTP/1.1 {status} Status\r\ncontent-length: 0\r\n\r\n");
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; length - body.len()];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}

/// A port on 127.0.0.1 nothing listens on (bound, then closed).
pub(crate) async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// A lookup over `pairs`, as `Tracer::from_vars` takes.
pub(crate) fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}
