//! A minimal HTTP receiver on 127.0.0.1 for the benchmarks whose jobs make requests
//! (`drain --task steps`, `replay`): it reads each request whole and answers `200 ok`,
//! closing the connection, and counts what it answered. Not a server for anything else.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A running receiver (its threads live as long as the process).
#[derive(Clone)]
pub struct Receiver {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    answered: Arc<AtomicU64>,
}

impl Receiver {
    pub fn start() -> anyhow::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let receiver = Receiver {
            origin: format!("http://{}", listener.local_addr()?),
            answered: Arc::default(),
        };
        let answered = receiver.answered.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let answered = answered.clone();
                std::thread::spawn(move || answer(stream, &answered));
            }
        });
        Ok(receiver)
    }

    /// Requests answered so far.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
}

/// Reads one request (headers, then a body of its `Content-Length`), counts it, and
/// answers it (counted before the answer leaves: once a client has its answer, the count
/// includes it).
fn answer(stream: TcpStream, answered: &AtomicU64) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    answered.fetch_add(1, Ordering::SeqCst);
    let mut stream = stream;
    stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
}
