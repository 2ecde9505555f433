//! Says why a connection failed in words an operator can act on: which TLS check failed
//! and which URL parameter to change.
//!
//! Owns: the wording of connection failures (TLS, refused, timed out).
//! Must not: retry or decide whether an error is transient (`StoreError::is_transient`).

use rustls::{CertificateError, Error as TlsError};
use sqlx::postgres::{PgConnectOptions, PgSslMode};

/// The reason `err` (from connecting with `options`) happened, with the fix. `None` when
/// sqlx's own message says it already.
pub fn explain(err: &sqlx::Error, options: &PgConnectOptions) -> Option<String> {
    let host = options.get_host();
    let mode = mode_name(options.get_ssl_mode());
    // A refused certificate surfaces as sqlx's `Tls` error or, from inside the handshake,
    // as an I/O error carrying rustls's.
    let tls = match err {
        sqlx::Error::Tls(inner) if inner.to_string().contains("server does not support TLS") => {
            return Some(format!(
                "the server does not accept TLS connections (its `ssl` setting is off) but the \
                 URL asks for sslmode={mode}: turn on ssl on the server, or set sslmode=prefer \
                 (or disable) in the URL"
            ));
        }
        sqlx::Error::Tls(inner) => inner.downcast_ref::<TlsError>()?,
        sqlx::Error::Io(io) => io.get_ref()?.downcast_ref::<TlsError>()?,
        _ => return None,
    };
    let TlsError::InvalidCertificate(cert) = tls else {
        return None;
    };
    Some(match cert {
        CertificateError::UnknownIssuer | CertificateError::BadSignature => format!(
            "the server's certificate is not signed by a CA this client trusts (sslmode={mode}): \
             set sslrootcert=/path/to/ca.pem in the URL to the CA that signed it, or use \
             sslmode=require to encrypt without checking the certificate"
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!(
                "the server's certificate is not valid for the host name `{host}` \
                 (sslmode=verify-full checks it): connect by a name the certificate lists (its \
                 subject alternative names), or use sslmode=verify-ca to check the CA only"
            )
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            format!("the server's certificate has expired (sslmode={mode}): renew it on the server")
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => format!(
            "the server's certificate is not valid yet (sslmode={mode}): check the clocks of \
             this host and the server"
        ),
        other => format!(
            "the server's certificate was refused ({other:?}, sslmode={mode}): check \
             sslrootcert in the URL"
        ),
    })
}

/// libpq's spelling of a mode.
fn mode_name(mode: PgSslMode) -> &'static str {
    match mode {
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
        PgSslMode::VerifyCa => "verify-ca",
        PgSslMode::VerifyFull => "verify-full",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(e: TlsError) -> sqlx::Error {
        sqlx::Error::Tls(Box::new(e))
    }

    #[test]
    fn each_certificate_failure_names_the_url_parameter_to_change() {
        let o: PgConnectOptions = "postgres://db.example/x?sslmode=verify-full"
            .parse()
            .unwrap();
        let ca = explain(
            &tls(TlsError::InvalidCertificate(
                CertificateError::UnknownIssuer,
            )),
            &o,
        )
        .unwrap();
        assert!(
            ca.contains("sslrootcert=") && ca.contains("verify-full"),
            "{ca}"
        );
        let name = explain(
            &tls(TlsError::InvalidCertificate(
                CertificateError::NotValidForName,
            )),
            &o,
        )
        .unwrap();
        assert!(
            name.contains("`db.example`") && name.contains("sslmode=verify-ca"),
            "{name}"
        );
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            TlsError::InvalidCertificate(CertificateError::UnknownIssuer),
        ));
        assert!(explain(&io, &o).unwrap().contains("sslrootcert="));
        assert!(explain(&sqlx::Error::PoolTimedOut, &o).is_none());
    }
}
