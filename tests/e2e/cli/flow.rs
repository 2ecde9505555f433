//! The flow-control verbs of the binary (docs/flow-control.md): `types set` with only
//! flow flags, `types pause|resume`, `tenants pause|resume`, `enqueue --concurrency-key`
//! and the reason `jobs show` gives for a held-back job.

use sqlx::PgPool;

use crate::support::Sluice;

#[sqlx::test(migrations = false)]
async fn flow_flags_pause_and_the_held_reason_through_the_cli(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "echo", "echo", &["--max-attempts", "2"]);
    let shown = sluice.json(&[
        "types",
        "set",
        "echo",
        "--max-running-per-key",
        "1",
        "--rate",
        "100/1m",
        "--json",
    ]);
    assert_eq!(shown["max_running_per_key"], 1);
    assert_eq!(shown["rate"], "100/1m");
    assert_eq!(shown["max_attempts"], 2, "the rest of the type is kept");
    assert_eq!(shown["paused"], false);

    let shown = sluice.json(&["types", "pause", "echo", "--json"]);
    assert_eq!(shown["paused"], true);
    let job = sluice.json(&[
        "enqueue",
        "echo",
        "--payload",
        "{}",
        "--concurrency-key",
        "acct-7",
        "--json",
    ]);
    let id = job["id"].to_string();
    let view = sluice.json(&["jobs", "show", &id, "--json"]);
    assert_eq!(view["concurrency_key"], "acct-7");
    assert_eq!(view["held"], "type paused");
    let text = sluice.ok(&["jobs", "show", &id]);
    assert!(text.contains("type paused"), "{text}");

    // A drained worker leaves it pending while paused.
    sluice.ok(&["worker", "--drain", "--drain-horizon", "1s"]);
    assert_eq!(
        sluice.json(&["jobs", "show", &id, "--json"])["state"],
        "pending"
    );
    sluice.ok(&["types", "resume", "echo"]);
    sluice.ok(&["tenants", "pause", "default"]);
    assert_eq!(
        sluice.json(&["tenants", "show", "default", "--json"])["paused"],
        true
    );
    assert_eq!(
        sluice.json(&["jobs", "show", &id, "--json"])["held"],
        "tenant paused"
    );
    sluice.ok(&["tenants", "resume", "default"]);
    sluice.ok(&["worker", "--drain"]);
    let done = sluice.json(&["jobs", "show", &id, "--json"]);
    assert_eq!(done["state"], "completed");
    assert_eq!(done["held"], serde_json::Value::Null);

    // Without --component and without a flow flag there is nothing to do.
    let refused = sluice.run(&["types", "set", "echo"]);
    assert!(!refused.status.success());
    let refused = sluice.run(&["types", "set", "echo", "--rate", "5/1y"]);
    assert!(!refused.status.success());
}
