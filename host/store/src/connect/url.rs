//! Reads a libpq connection URL into one set of sqlx connect options per host.
//!
//! Owns: what sqlx's own URL parser lacks and psql users write: several hosts
//! (`postgres://h1:5432,h2:5433/db`), `target_session_attrs`, `sslrootcert=system`,
//! `sslmode=require` turning into `verify-ca` when a root certificate is given (libpq's
//! rule), a check that the certificate files named can be read, the default
//! `application_name`, and no TLS by default to a server on this machine (a loopback
//! address or `localhost`) when neither the URL nor `PGSSLMODE` asks for it: encryption
//! that never leaves the machine protects nothing and halves the worker's throughput
//! against a local server (docs/benchmarks.md, docs/postgres.md).
//! Must not: connect (the caller does), or accept a parameter it would silently ignore
//! and that changes where or how securely it connects.

use sqlx::postgres::{PgConnectOptions, PgSslMode};

use crate::error::ConnectError;

/// What the URL asks of the server a session lands on (`target_session_attrs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionAttrs {
    /// Any server that accepts the connection (libpq's default).
    Any,
    /// Only a server that accepts writes (`read-write` or `primary`): standbys are
    /// skipped, and a primary that became one is left.
    ReadWrite,
}

/// A parsed URL: the options for each host, in the URL's order.
#[derive(Clone, Debug)]
pub struct Target {
    pub hosts: Vec<PgConnectOptions>,
    pub attrs: SessionAttrs,
}

impl Target {
    /// `host:port` of each host, for messages.
    pub fn addresses(&self) -> Vec<String> {
        self.hosts.iter().map(address).collect()
    }
}

/// `host:port` (or the socket path) of one host's options.
pub fn address(options: &PgConnectOptions) -> String {
    match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    }
}

/// Parses `url`; `application_name` is used unless the URL (or `PGAPPNAME`) sets one.
pub fn parse(url: &str, application_name: &str) -> Result<Target, ConnectError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(not_a_url)?;
    if scheme != "postgres" && scheme != "postgresql" {
        return Err(not_a_url());
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (userinfo, hostlist) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (Some(user), hosts),
        None => (None, authority),
    };
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, query),
        None => (tail, ""),
    };

    let mut attrs = SessionAttrs::Any;
    let mut mode_given = std::env::var_os("PGSSLMODE").is_some();
    let mut system_roots = false;
    let mut root_cert = false;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "target_session_attrs" => attrs = session_attrs(value)?,
            "sslrootcert" | "ssl-root-cert" | "ssl-ca" if value == "system" => {
                system_roots = true;
            }
            _ => {
                if matches!(key, "sslmode" | "ssl-mode") {
                    mode_given = true;
                }
                if matches!(key, "sslrootcert" | "ssl-root-cert" | "ssl-ca") {
                    root_cert = true;
                }
                if matches!(
                    key,
                    "sslrootcert" | "ssl-root-cert" | "ssl-ca" | "sslcert" | "sslkey"
                ) {
                    check_readable(key, value)?;
                }
                kept.push(pair);
            }
        }
    }
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let user = userinfo.map(|u| format!("{u}@")).unwrap_or_default();

    let hosts: Vec<&str> = hostlist.split(',').collect();
    let mut options = Vec::with_capacity(hosts.len());
    for host in hosts {
        let single = format!("postgres://{user}{host}{path}{query}");
        let mut parsed: PgConnectOptions = single.parse().map_err(|e| {
            ConnectError::BadUrl(format!(
                "the database URL is not a PostgreSQL connection string \
                 (postgres://user@host:port/db, or postgres://user@h1:p1,h2:p2/db for \
                 several hosts): {e}"
            ))
        })?;
        if system_roots {
            // The built-in web roots are trusted in any case; libpq insists on a full
            // check with them, and so do we.
            match parsed.get_ssl_mode() {
                PgSslMode::VerifyFull => {}
                PgSslMode::Prefer | PgSslMode::Allow => {
                    parsed = parsed.ssl_mode(PgSslMode::VerifyFull);
                }
                weak => {
                    return Err(ConnectError::BadUrl(format!(
                        "sslrootcert=system needs sslmode=verify-full (the URL says {weak:?}): \
                         drop sslmode or set sslmode=verify-full"
                    )));
                }
            }
        } else if root_cert && matches!(parsed.get_ssl_mode(), PgSslMode::Require) {
            // libpq: "if a root CA file exists, sslmode=require behaves as verify-ca".
            parsed = parsed.ssl_mode(PgSslMode::VerifyCa);
        } else if !mode_given && !root_cert && on_this_machine(&parsed) {
            parsed = parsed.ssl_mode(PgSslMode::Disable);
        }
        if parsed.get_application_name().is_none() {
            parsed = parsed.application_name(application_name);
        }
        options.push(parsed);
    }
    Ok(Target {
        hosts: options,
        attrs,
    })
}

/// True for a server reached over loopback (`localhost`, `127.0.0.0/8`, `::1`) or a Unix
/// socket: its traffic never leaves this machine.
fn on_this_machine(options: &PgConnectOptions) -> bool {
    if options.get_socket().is_some() {
        return true;
    }
    let host = options
        .get_host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn session_attrs(value: &str) -> Result<SessionAttrs, ConnectError> {
    match value {
        "any" => Ok(SessionAttrs::Any),
        "read-write" | "primary" => Ok(SessionAttrs::ReadWrite),
        other => Err(ConnectError::BadUrl(format!(
            "target_session_attrs={other} is not supported: Sluice writes on every \
             connection, so use read-write (or primary, the same here) or any"
        ))),
    }
}

fn check_readable(key: &str, path: &str) -> Result<(), ConnectError> {
    let decoded = percent_decode(path);
    std::fs::File::open(&decoded)
        .map(drop)
        .map_err(|error| ConnectError::UnreadableFile {
            key: key.to_owned(),
            path: decoded,
            error,
        })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap() * 16 + hex(l).unwrap()) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn not_a_url() -> ConnectError {
    ConnectError::BadUrl(
        "the database URL is not a PostgreSQL connection string (postgres://user@host:port/db)"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_hosts_become_one_options_each_with_the_rest_shared() {
        let t = parse(
            "postgres://app:pw@h1:5432,h2:5433,[::1]/jobs?target_session_attrs=read-write&sslmode=require",
            "sluice test",
        )
        .unwrap();
        assert_eq!(t.attrs, SessionAttrs::ReadWrite);
        assert_eq!(t.addresses(), ["h1:5432", "h2:5433", "[::1]:5432"]);
        for h in &t.hosts {
            assert_eq!(h.get_database(), Some("jobs"));
            assert_eq!(h.get_username(), "app");
            assert!(matches!(h.get_ssl_mode(), PgSslMode::Require));
            assert_eq!(h.get_application_name(), Some("sluice test"));
        }
    }

    #[test]
    fn a_server_on_this_machine_gets_no_tls_unless_the_url_asks_for_it() {
        if std::env::var_os("PGSSLMODE").is_some() {
            return; // the environment decides for every host
        }
        let mode = |url: &str| parse(url, "s").unwrap().hosts[0].get_ssl_mode();
        for local in [
            "postgres://127.0.0.1:5432/db",
            "postgres://localhost/db",
            "postgres://[::1]:5432/db",
            "postgres://127.0.0.2/db",
        ] {
            assert!(matches!(mode(local), PgSslMode::Disable), "{local}");
        }
        assert!(matches!(
            mode("postgres://db.example/db"),
            PgSslMode::Prefer
        ));
        assert!(matches!(mode("postgres://10.0.0.1/db"), PgSslMode::Prefer));
        assert!(matches!(
            mode("postgres://127.0.0.1/db?sslmode=require"),
            PgSslMode::Require
        ));
        assert!(matches!(
            mode("postgres://localhost/db?sslmode=prefer"),
            PgSslMode::Prefer
        ));
    }

    #[test]
    fn the_urls_application_name_wins_and_odd_session_attrs_are_refused() {
        let t = parse("postgres://h/db?application_name=mine", "sluice x").unwrap();
        assert_eq!(t.hosts[0].get_application_name(), Some("mine"));
        assert_eq!(t.attrs, SessionAttrs::Any);
        let e = parse("postgres://h/db?target_session_attrs=standby", "s").unwrap_err();
        assert!(e.to_string().contains("use read-write"), "{e}");
        assert!(matches!(e, ConnectError::BadUrl(_)), "{e:?}");
        assert!(matches!(
            parse("mysql://h/db", "s"),
            Err(ConnectError::BadUrl(_))
        ));
    }

    #[test]
    fn a_root_certificate_makes_require_verify_ca_and_system_means_verify_full() {
        let ca = std::env::temp_dir().join(format!("sluice-url-test-{}.pem", std::process::id()));
        std::fs::write(&ca, "not checked here").unwrap();
        let url = format!(
            "postgres://h/db?sslmode=require&sslrootcert={}",
            ca.display()
        );
        assert!(matches!(
            parse(&url, "s").unwrap().hosts[0].get_ssl_mode(),
            PgSslMode::VerifyCa
        ));
        std::fs::remove_file(&ca).unwrap();
        let e = parse(&url, "s").unwrap_err();
        assert!(
            matches!(&e, ConnectError::UnreadableFile { key, .. } if key == "sslrootcert"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with("sslrootcert=") && e.contains("cannot read"),
            "{e}"
        );
        let sys = parse("postgres://h/db?sslrootcert=system", "s").unwrap();
        assert!(matches!(sys.hosts[0].get_ssl_mode(), PgSslMode::VerifyFull));
        let e = parse("postgres://h/db?sslrootcert=system&sslmode=require", "s").unwrap_err();
        assert!(e.to_string().contains("sslmode=verify-full"), "{e}");
    }
}
