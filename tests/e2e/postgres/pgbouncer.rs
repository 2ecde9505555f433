//! Behind PgBouncer (Debian's `pgbouncer`, started here on a free port in front of
//! `DATABASE_URL`'s server): two workers drain 2,000 jobs with `DATABASE_URL` through
//! the pooler and LISTEN on the direct URL (`--direct-database-url`), the read surfaces
//! answer through it, and nothing reports a prepared-statement error.
//!
//! Transaction mode needs PgBouncer 1.21 or later (`max_prepared_statements`): sqlx runs
//! every statement as a named protocol-level prepared statement, which an older PgBouncer
//! hands to whichever server connection comes next ("prepared statement \"sqlx_s_1\"
//! already exists"). With an older PgBouncer (Debian 12 ships 1.18) the test drains in
//! session mode and says so. docs/postgres.md has the settings.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sluice_store::{NewJob, Store};
use sqlx::PgPool;

use super::{postgres_user_if_root, tool, wait_all_completed};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, database_url};

const JOBS: usize = 2_000;

/// A PgBouncer process, stopped on drop.
struct PgBouncer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl PgBouncer {
    /// Starts `bin` in `mode` in front of `host:port`; runs as `postgres` when we are root
    /// (PgBouncer refuses to run as root).
    fn start(bin: &Path, host: &str, server_port: u16, mode: &str) -> PgBouncer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("sluice-pgbouncer-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("userlist.txt"), "\"postgres\" \"\"\n").unwrap();
        let config = format!(
            "[databases]\n* = host={host} port={server_port}\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {dir}/userlist.txt\npool_mode = {mode}\n\
             default_pool_size = {pool_size}\nmax_client_conn = 500\n\
             ignore_startup_parameters = extra_float_digits,options\n\
             {prepared}",
            dir = dir.display(),
            // Session mode pins a server connection to each client connection: room for
            // every pool (2 workers, the test, the CLI).
            pool_size = if mode == "session" { 60 } else { 10 },
            prepared = if tracks_prepared_statements(bin) {
                "max_prepared_statements = 200\n"
            } else {
                ""
            },
        );
        std::fs::write(dir.join("pgbouncer.ini"), config).unwrap();
        let mut command = Command::new(bin);
        if let Some((uid, gid)) = postgres_user_if_root() {
            use std::os::unix::process::CommandExt;
            Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status()
                .unwrap();
            command.uid(uid).gid(gid);
        }
        let child = command
            .arg(dir.join("pgbouncer.ini"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("pgbouncer.log")).unwrap())
            .spawn()
            .expect("start pgbouncer");
        let bouncer = PgBouncer { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "pgbouncer did not listen:\n{}",
                bouncer.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        bouncer
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }

    fn version(bin: &Path) -> String {
        Command::new(bin)
            .arg("--version")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .unwrap_or_default()
    }
}

/// Whether this PgBouncer (1.21 and later) tracks protocol-level prepared statements in
/// transaction mode (`max_prepared_statements`).
fn tracks_prepared_statements(bin: &Path) -> bool {
    let version = PgBouncer::version(bin);
    let numbers: Vec<u32> = version
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .split('.')
        .filter_map(|n| n.parse().ok())
        .collect();
    numbers.as_slice() >= [1, 21].as_slice()
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[sqlx::test(migrations = false)]
async fn two_thousand_jobs_drain_through_pgbouncer(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let Some(bin) = tool("pgbouncer", "pgbouncer") else {
        return;
    };
    let start = Instant::now();
    let direct = database_url(&pool);
    let options = pool.connect_options();
    let mode = if tracks_prepared_statements(&bin) {
        "transaction"
    } else {
        eprintln!(
            "postgres::pgbouncer: {} cannot keep sqlx's prepared statements in transaction mode \
             (that needs 1.21+ and max_prepared_statements): draining in session mode",
            PgBouncer::version(&bin)
        );
        "session"
    };
    let bouncer = PgBouncer::start(&bin, options.get_host(), options.get_port(), mode);
    let db = options.get_database().unwrap().to_owned();
    let pooled = format!("postgres://postgres@127.0.0.1:{}/{db}", bouncer.port);
    eprintln!(
        "postgres::pgbouncer: {} started in {:?}",
        PgBouncer::version(&bin),
        start.elapsed()
    );

    // Migrations take a session lock: they run on the direct URL (docs/postgres.md).
    let direct_sluice = Sluice::new(&pool);
    direct_sluice.ok(&["migrate"]);
    direct_sluice.define("sleep", "sleep", &[]);

    let sluice = Sluice {
        url: pooled.clone(),
        cache: direct_sluice.cache.clone(),
    };
    let store = Store::connect(&pooled)
        .await
        .expect("connect through pgbouncer");
    for chunk in (0..JOBS).collect::<Vec<_>>().chunks(500) {
        let rows: Vec<NewJob> = chunk
            .iter()
            .map(|_| NewJob::new("default", "sleep", br#"{"ms":1}"#.to_vec()))
            .collect();
        store
            .enqueue_many(&rows)
            .await
            .expect("enqueue through pgbouncer");
    }
    let drain = Instant::now();
    let args = ["--concurrency", "8", "--direct-database-url", &direct];
    let mut workers: Vec<WorkerProcess> = ["pgb-w1", "pgb-w2"]
        .iter()
        .map(|id| WorkerProcess::spawn(&sluice, id, &args))
        .collect();
    wait_all_completed(&pool, JOBS as i64, Duration::from_secs(180)).await;
    let drained = drain.elapsed();

    // The read surfaces, through the pooler.
    let stats = sluice.json(&["stats"]);
    assert!(stats.to_string().contains("completed"), "{stats}");
    sluice.ok(&["jobs", "list", "--limit", "5"]);
    sluice.ok(&["workers", "list"]);

    for w in &workers {
        w.signal("TERM");
    }
    for w in &mut workers {
        let status = w
            .wait_timeout(Duration::from_secs(20))
            .expect("worker exits");
        assert!(status.success(), "{}: {status}\n{}", w.id, w.log());
    }
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.job_attempts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, JOBS as i64, "one attempt per job, none failed");
    for w in &workers {
        let log = w.log();
        assert!(
            !log.contains("prepared statement") && !log.contains("ERROR"),
            "{} logged an error through pgbouncer:\n{log}",
            w.id
        );
    }
    eprintln!(
        "postgres::pgbouncer: {JOBS} jobs drained by 2 workers through pgbouncer ({mode} mode) in {drained:?} \
         ({:.0} jobs/s); whole test {:?}",
        JOBS as f64 / drained.as_secs_f64(),
        start.elapsed()
    );
}
