//! A small HTTP/1.1 server on 127.0.0.1 for egress tests: it records every connection and
//! request and answers by path — `/ok` (200 `hello`), `/big` (200, 2 MiB), `/chunked`
//! (200, 64 KiB chunked: no length declared), `/slow` (200 after 10 s, noting whether the
//! client hung up first), `/redirect` (302 to `/ok`), `/busy/STATUS` (that status, with
//! `retry-after: VALUE` when asked with `?retry-after=VALUE`, percent-encoded).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub host: String,
}

#[derive(Default)]
pub struct Log {
    pub accepted: usize,
    pub requests: Vec<Seen>,
    /// `/slow` requests whose client closed the connection before the answer.
    pub hung_up: usize,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Log>>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let shared = log.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                shared.lock().unwrap().accepted += 1;
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        TestServer { addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `http://127.0.0.1:PORT`, the allow-list entry for this server.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn accepted(&self) -> usize {
        self.log.lock().unwrap().accepted
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().unwrap().requests.clone()
    }

    pub fn hung_up(&self) -> usize {
        self.log.lock().unwrap().hung_up
    }
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Log>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    let header = |name: &str| {
        head.split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let host = header("host").unwrap_or_default();
    // Read the whole body before answering: closing a socket with unread bytes resets
    // the connection, and the client may see the reset before the answer.
    let body_len: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let body_read = |buf: &[u8]| {
        let body = &buf[head_end + 4..];
        if chunked {
            body.starts_with(b"0\r\n\r\n") || body.windows(7).any(|w| w == b"\r\n0\r\n\r\n")
        } else {
            body.len() >= body_len
        }
    };
    while !body_read(&buf) {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    log.lock().unwrap().requests.push(Seen {
        method,
        path: path.clone(),
        host,
    });
    if let Some(busy) = path.strip_prefix("/busy/") {
        let _ = stream.write_all(&busy_answer(busy)).await;
        let _ = stream.shutdown().await;
        return;
    }
    let response: Vec<u8> = match path.as_str() {
        "/ok" => b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello".to_vec(),
        "/big" => {
            let mut r =
                b"HTTP/1.1 200 OK\r\ncontent-length: 2097152\r\nconnection: close\r\n\r\n".to_vec();
            r.resize(r.len() + 2 * 1024 * 1024, b'x');
            r
        }
        "/chunked" => {
            let mut r =
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
                    .to_vec();
            for _ in 0..16 {
                r.extend_from_slice(b"1000\r\n");
                r.resize(r.len() + 4096, b'x');
                r.extend_from_slice(b"\r\n");
            }
            r.extend_from_slice(b"0\r\n\r\n");
            r
        }
        "/redirect" => {
            b"HTTP/1.1 302 Found\r\nlocation: /ok\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_vec()
        }
        "/slow" => {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(10)) => {}
                _ = stream.read(&mut chunk) => {
                    // EOF or reset: the client gave up.
                    log.lock().unwrap().hung_up += 1;
                    return;
                }
            }
            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nlate".to_vec()
        }
        _ => b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

/// The answer to `/busy/STATUS[?retry-after=VALUE]`.
fn busy_answer(rest: &str) -> Vec<u8> {
    let (status, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut head = format!("HTTP/1.1 {status} Busy\r\ncontent-length: 4\r\nconnection: close\r\n");
    if let Some(value) = query.strip_prefix("retry-after=") {
        head.push_str(&format!("retry-after: {}\r\n", percent_decoded(value)));
    }
    head.push_str("\r\nbusy");
    head.into_bytes()
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).expect("a %XX escape"));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("a UTF-8 value")
}
