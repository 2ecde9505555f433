//! The worker registry through the real binary: `sluice worker` registers (pid,
//! concurrency, contracts), an idle worker keeps its row alive, a second start with the
//! same id is refused while the first runs, SIGTERM marks the row stopped (the id is free
//! at once), SIGKILL leaves it to turn lost once the lease passes (then the id is free
//! again); `sluice workers list --json` and `GET /v1/workers` (admin only) show it all.
//! Leases are 3 s so the whole story takes seconds.

use std::time::Duration;

use crate::support::http::{Api, ENV_ADMIN_TOKEN, json};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, wait_for};
use sluice_store::{Store, WorkerRecord, WorkerState};
use sqlx::PgPool;

const ID: &str = "registry-w1";
const ARGS: &[&str] = &[
    "--concurrency",
    "3",
    "--lease",
    "3s",
    "--max-contract",
    "0.1",
    "--no-scheduler",
    "--no-retention",
];

async fn row(store: &Store, id: &str) -> Option<WorkerRecord> {
    store
        .list_workers()
        .await
        .unwrap()
        .into_iter()
        .find(|w| w.id == id)
}

/// Waits until the row of `id` is in `state` with `pid`.
async fn wait_row(store: &Store, id: &str, state: WorkerState, pid: u32, limit: Duration) {
    wait_for(&format!("{id} {state:?} with pid {pid}"), limit, || async {
        row(store, id)
            .await
            .filter(|w| w.state == state && w.pid == pid as i32)
            .map(|_| ())
    })
    .await;
}

fn spawn(sluice: &Sluice) -> WorkerProcess {
    WorkerProcess::spawn(sluice, ID, ARGS)
}

fn terminate(worker: &mut WorkerProcess) {
    worker.signal("TERM");
    let status = worker
        .wait_timeout(Duration::from_secs(20))
        .expect("the worker exits after SIGTERM");
    assert!(status.success(), "{status}; log:\n{}", worker.log());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn workers_register_refuse_a_live_id_and_end_stopped_or_lost(pool: PgPool) {
    let store = Store::new(pool.clone());
    let sluice = Sluice::new(&pool);
    let mut first = spawn(&sluice);
    wait_row(
        &store,
        ID,
        WorkerState::Running,
        first.pid(),
        Duration::from_secs(30),
    )
    .await;

    // The CLI shows what it runs.
    let listed = sluice.json(&["workers", "list"]);
    let w = listed
        .as_array()
        .expect("a JSON array")
        .iter()
        .find(|w| w["id"] == ID)
        .unwrap_or_else(|| panic!("{ID} not listed: {listed}"));
    assert_eq!(w["kind"], "worker");
    assert_eq!(w["state"], "running");
    assert_eq!(w["pid"], first.pid());
    assert_eq!(w["concurrency"], 3);
    assert_eq!(w["contracts"], serde_json::json!(["0.1"]));
    assert_eq!(w["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(w["lease_ms"], 3000);
    assert!(w["stopped_at"].is_null());

    // A second start with the same id is refused at once, naming the live one.
    let second = sluice.run(&[
        "worker",
        "--worker-id",
        ID,
        "--no-scheduler",
        "--no-retention",
    ]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a duplicate id started: {stderr}");
    for part in [
        format!("worker id \"{ID}\" is in use"),
        format!("pid {}", first.pid()),
        "last seen".to_owned(),
    ] {
        assert!(stderr.contains(&part), "{part:?} missing from: {stderr}");
    }

    // Idle past its lease, the worker still heartbeats its row (every third of it).
    let before = row(&store, ID).await.unwrap().last_heartbeat;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let idle = row(&store, ID).await.unwrap();
    assert_eq!(
        idle.state,
        WorkerState::Running,
        "an idle worker looks lost"
    );
    assert!(idle.last_heartbeat > before);
    assert_eq!(
        idle.pid,
        first.pid() as i32,
        "the refused start took the row"
    );

    // The API lists it for an admin token only.
    let api = Api::start(&pool).await;
    let (status, body) = json(api.get("/v1/workers", ENV_ADMIN_TOKEN).await).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.as_array().unwrap().iter().any(|w| w["id"] == ID),
        "{body}"
    );
    let tenant_token = api.tenant("acme").await;
    let (status, body) = json(api.get("/v1/workers", &tenant_token).await).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");

    // SIGTERM: the row says stopped, and the id is free at once.
    terminate(&mut first);
    assert_eq!(row(&store, ID).await.unwrap().state, WorkerState::Stopped);
    let mut crashed = spawn(&sluice);
    wait_row(
        &store,
        ID,
        WorkerState::Running,
        crashed.pid(),
        Duration::from_secs(30),
    )
    .await;

    // SIGKILL: no stop; once the lease passes the row shows lost and the id is free.
    crashed.kill();
    wait_row(
        &store,
        ID,
        WorkerState::Lost,
        crashed.pid(),
        Duration::from_secs(10),
    )
    .await;
    let listed = sluice.json(&["workers", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["id"] == ID && w["state"] == "lost"),
        "{listed}"
    );
    let mut again = spawn(&sluice);
    wait_row(
        &store,
        ID,
        WorkerState::Running,
        again.pid(),
        Duration::from_secs(30),
    )
    .await;
    terminate(&mut again);
    assert_eq!(row(&store, ID).await.unwrap().state, WorkerState::Stopped);
}
