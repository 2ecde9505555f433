//! TLS to PostgreSQL: one throwaway server per test run with `ssl = on`, a certificate
//! for `localhost` from a CA made here, and a pg_hba.conf that takes TCP connections only
//! over TLS (so anything that connects at all is encrypted). Each test has its own
//! database on it. What psql users write in the URL (`sslmode`, `sslrootcert`,
//! `sslcert`/`sslkey`) means the same to every Sluice process, and a refused certificate
//! says which parameter to change.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use sluice_store::{NewJob, Store};
use sqlx::postgres::PgPoolOptions;

use super::{wait_all_completed, write};
use crate::support::Sluice;
use crate::support::cluster::Cluster;
use crate::support::worker_process::WorkerProcess;

/// A CA made for this run.
struct Ca(CertifiedIssuer<'static, KeyPair>);

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        Ca(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    /// A certificate (PEM) and its key (PEM) for `names`, as a server or a client
    /// (`common_name`: the user a client certificate logs in as).
    fn issue(&self, names: &[&str], common_name: &str, server: bool) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let cert = params.signed_by(&key, &self.0).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// The run's TLS server and the files a client names in its URL.
struct TlsServer {
    cluster: &'static Cluster,
    /// The CA that signed the server's certificate.
    ca: PathBuf,
    /// A CA that signed nothing the server shows.
    stranger: PathBuf,
    /// A client certificate and key for the role `certuser` (pg_hba: `cert`).
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn server() -> &'static TlsServer {
    static SERVER: OnceLock<TlsServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let start = Instant::now();
        let ca = Ca::new("sluice test CA");
        let cluster = Cluster::init();
        let (cert, key) = ca.issue(&["localhost"], "localhost", true);
        cluster.write("server.crt", cert.as_bytes());
        cluster.write("server.key", key.as_bytes());
        cluster.write("root.crt", ca.0.pem().as_bytes());
        cluster.write(
            "pg_hba.conf",
            b"local all all trust\n\
              hostssl all certuser 127.0.0.1/32 cert\n\
              hostssl all all 127.0.0.1/32 trust\n",
        );
        cluster.start_with(&["ssl=on", "ssl_ca_file=root.crt"]);
        // Beside the data directory, so the cluster's watchdog deletes them too.
        let dir = cluster.dir().join("client");
        std::fs::create_dir_all(&dir).unwrap();
        let (client_cert, client_key) = ca.issue(&[], "certuser", false);
        let server = TlsServer {
            ca: write(&dir, "ca.pem", ca.0.pem().as_bytes()),
            stranger: write(&dir, "stranger.pem", Ca::new("stranger").0.pem().as_bytes()),
            client_cert: write(&dir, "client.crt", client_cert.as_bytes()),
            client_key: write(&dir, "client.key", client_key.as_bytes()),
            cluster: cluster.shared(),
        };
        eprintln!(
            "postgres::tls: CA, certificates and server started in {:?}",
            start.elapsed()
        );
        server
    })
}

impl TlsServer {
    fn url(&self, host: &str, db: &str, params: &str) -> String {
        format!(
            "postgres://postgres@{host}:{}/{db}?{params}",
            self.cluster.port
        )
    }

    /// Creates database `db` (and the role `certuser`) through an encrypted connection.
    async fn database(&self, db: &str) -> String {
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(&self.url("127.0.0.1", "postgres", "sslmode=require"))
            .await
            .expect("connect to the TLS server");
        for sql in [
            format!("CREATE DATABASE {db}"),
            "DO $$ BEGIN CREATE ROLE certuser LOGIN; \
             EXCEPTION WHEN duplicate_object OR unique_violation THEN END $$"
                .to_owned(),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&admin)
                .await
                .expect("create the test's database");
        }
        db.to_owned()
    }
}

/// The error of connecting a store to `url`, all of its chain.
async fn refused(url: &str) -> String {
    match Store::connect(url).await {
        Ok(_) => panic!("{url}: connected, but should have been refused"),
        Err(e) => format!("{e:#}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sslmode_require_every_process_works_and_every_connection_is_encrypted() {
    let server = server();
    let db = server.database("tls_e2e").await;
    let url = server.url("127.0.0.1", &db, "sslmode=require");
    let sluice = Sluice {
        url: url.clone(),
        cache: std::env::temp_dir().join(format!("sluice-tls-cache-{}", server.cluster.port)),
    };
    sluice.ok(&["migrate"]);
    sluice.define("sleep", "sleep", &[]);
    let store = Store::connect_with(&url, "sluice test", 2).await.unwrap();
    let rows: Vec<NewJob> = (0..40)
        .map(|_| NewJob::new("default", "sleep", br#"{"ms":5}"#.to_vec()))
        .collect();
    store.enqueue_many(&rows).await.expect("enqueue over TLS");
    crate::support::enqueue(&sluice, "sleep", serde_json::json!({"ms": 5}));

    let worker = WorkerProcess::spawn(&sluice, "tls-w1", &["--concurrency", "4"]);
    let log = std::env::temp_dir().join(format!("sluice-tls-serve-{}.log", server.cluster.port));
    let mut serve = sluice
        .command(&["--log-format", "json", "serve", "--listen", "127.0.0.1:0"])
        .env("SLUICE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn sluice serve");
    let check = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    wait_all_completed(&check, 41, Duration::from_secs(60)).await;
    let address =
        crate::support::wait_for("sluice serve's address", Duration::from_secs(30), || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let found = text.lines().find_map(|line| {
                let event: serde_json::Value = serde_json::from_str(line).ok()?;
                let fields = &event["fields"];
                (fields["message"] == "serving the HTTP API")
                    .then(|| fields["address"].as_str().map(str::to_owned))
                    .flatten()
            });
            async move { found }
        })
        .await;
    let health = crate::support::http_get(format!("http://{address}/healthz"))
        .await
        .unwrap();
    assert_eq!(
        health.status(),
        200,
        "sluice serve answers from the database"
    );

    let seen: Vec<(String, bool, Option<String>)> = sqlx::query_as(
        "SELECT a.application_name, s.ssl, s.version FROM pg_stat_activity a \
         JOIN pg_stat_ssl s USING (pid) \
         WHERE a.datname = $1 AND a.application_name LIKE 'sluice%' ORDER BY 1",
    )
    .bind(&db)
    .fetch_all(&check)
    .await
    .unwrap();
    let names: Vec<&str> = seen.iter().map(|(n, _, _)| n.as_str()).collect();
    for wanted in ["sluice worker tls-w1", "sluice serve", "sluice test"] {
        assert!(
            names.contains(&wanted),
            "no connection named {wanted:?}: {seen:?}"
        );
    }
    assert!(
        seen.iter().all(|(_, ssl, _)| *ssl),
        "every Sluice connection is encrypted: {seen:?}"
    );
    eprintln!(
        "postgres::tls: {} Sluice connections, all encrypted: {seen:?}",
        seen.len()
    );
    let _ = serve.kill();
    let _ = serve.wait();
    drop(worker);
}

#[tokio::test]
async fn verify_full_accepts_the_certificates_name_and_refuses_another_naming_the_parameter() {
    let server = server();
    let db = server.database("tls_verify").await;
    let ca = format!("sslrootcert={}", server.ca.display());
    let full = format!("sslmode=verify-full&{ca}");

    let store = Store::connect(&server.url("localhost", &db, &full)).await;
    store
        .expect("verify-full by the name on the certificate")
        .ping()
        .await
        .unwrap();
    let verify_ca = format!("sslmode=verify-ca&{ca}");
    Store::connect(&server.url("127.0.0.1", &db, &verify_ca))
        .await
        .expect("verify-ca does not check the name");

    let wrong_name = refused(&server.url("127.0.0.1", &db, &full)).await;
    assert!(
        wrong_name.contains("not valid for the host name `127.0.0.1`")
            && wrong_name.contains("sslmode=verify-ca"),
        "{wrong_name}"
    );
    let stranger = format!("sslrootcert={}", server.stranger.display());
    for mode in ["verify-full", "verify-ca", "require"] {
        // `require` with a root certificate checks the CA, as in libpq.
        let url = server.url("localhost", &db, &format!("sslmode={mode}&{stranger}"));
        let wrong_ca = refused(&url).await;
        assert!(
            wrong_ca.contains("not signed by a CA this client trusts")
                && wrong_ca.contains("set sslrootcert="),
            "{mode}: {wrong_ca}"
        );
    }
    let missing = refused(&server.url(
        "localhost",
        &db,
        "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
    ))
    .await;
    assert!(
        missing.contains("sslrootcert=/nonexistent/ca.pem") && missing.contains("cannot read"),
        "{missing}"
    );

    // The CLI says the same.
    let sluice = Sluice {
        url: server.url("127.0.0.1", &db, &full),
        cache: std::env::temp_dir(),
    };
    let out = sluice.run(&["stats"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("not valid for the host name `127.0.0.1`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_client_certificate_in_the_url_logs_in_where_the_server_demands_one() {
    let server = server();
    let db = server.database("tls_client_cert").await;
    let url = |params: &str| {
        format!(
            "postgres://certuser@localhost:{}/{db}?sslmode=verify-full&sslrootcert={}{params}",
            server.cluster.port,
            server.ca.display()
        )
    };
    let without = refused(&url("")).await;
    assert!(without.contains("certificate"), "{without}");
    let with = url(&format!(
        "&sslcert={}&sslkey={}",
        server.client_cert.display(),
        server.client_key.display()
    ));
    let store = Store::connect(&with)
        .await
        .expect("log in with the client certificate");
    store.ping().await.unwrap();
}
