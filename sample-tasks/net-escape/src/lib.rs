//! `net-escape` (hostile): tries TCP to 127.0.0.1:5432 (Postgres) and 1.1.1.1:80 with a
//! 1 s timeout, a UDP bind and a DNS lookup. Completes with a JSON report, one key per
//! attempt, each `"error: ..."` or `"ok: ..."`; any `ok:` means the sandbox leaked network
//! access.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskResult};

fn report<T: std::fmt::Debug>(r: std::io::Result<T>) -> String {
    match r {
        Ok(v) => format!("ok: {v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn tcp(addr: &str) -> String {
    let addr: SocketAddr = addr.parse().expect("literal socket address");
    report(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map(|s| s.peer_addr()))
}

fn run(_job: Job) -> TaskResult {
    sluice_guest::json_output(&json!({
        "tcp_loopback": tcp("127.0.0.1:5432"),
        "tcp_internet": tcp("1.1.1.1:80"),
        "udp_bind": report(UdpSocket::bind("0.0.0.0:0").map(|s| s.local_addr())),
        "dns": report(("example.com", 80).to_socket_addrs().map(|a| a.collect::<Vec<_>>())),
    }))
}

sluice_guest::export_task!(run);
