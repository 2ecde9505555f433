//! Transactional enqueue from SQL, end to end: a job enqueued with `sluice.enqueue(...)`
//! inside a committed transaction is run by the real `sluice worker --drain`; one from a
//! rolled-back transaction never appears. The psql example of `docs/enqueue-from-sql.md`
//! is run as written.

use std::process::Command;

use crate::support::{Sluice, repo_root};
use sqlx::PgPool;

/// The first ```sql block after the `<!-- example: psql` marker of the doc.
fn documented_psql_example() -> String {
    let doc = std::fs::read_to_string(repo_root().join("docs/enqueue-from-sql.md")).unwrap();
    let after_marker = &doc[doc
        .find("<!-- example: psql")
        .expect("docs/enqueue-from-sql.md marks its psql example")..];
    let start = after_marker.find("```sql\n").expect("a sql block") + "```sql\n".len();
    let end = after_marker[start..].find("```").expect("the block ends") + start;
    after_marker[start..end].to_owned()
}

/// The output of job `job` as stored, byte for byte (`jobs show` prints it as JSON).
async fn output_text(pool: &PgPool, job: &serde_json::Value) -> String {
    let bytes: Vec<u8> = sqlx::query_scalar("SELECT output FROM sluice.jobs WHERE id = $1")
        .bind(job["id"].as_i64().expect("a job id"))
        .fetch_one(pool)
        .await
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

#[sqlx::test(migrations = false)]
async fn a_committed_sql_enqueue_is_run_by_the_worker_and_a_rolled_back_one_never_appears(
    pool: PgPool,
) {
    let sluice = Sluice::with_type(&pool, "send-email", "echo", &[]);
    let call = "SELECT sluice.enqueue(tenant => 'default', job_type => 'send-email', \
                payload => $1::jsonb)";

    let mut tx = pool.begin().await.unwrap();
    let committed: i64 = sqlx::query_scalar(call)
        .bind(r#"{"to":"ada@example.com"}"#)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut tx = pool.begin().await.unwrap();
    let rolled_back: i64 = sqlx::query_scalar(call)
        .bind(r#"{"to":"bob@example.com"}"#)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();

    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(summary["completed"], 1, "worker summary: {summary}");
    let shown = sluice.json(&["jobs", "show", &committed.to_string()]);
    assert_eq!(shown["state"], "completed", "{shown}");
    assert_eq!(
        output_text(&pool, &shown).await,
        r#"{"to": "ada@example.com"}"#
    );
    assert_eq!(
        shown["output"],
        serde_json::json!({"to": "ada@example.com"})
    );

    let out = sluice.run(&["jobs", "show", &rolled_back.to_string()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the rolled-back job does not exist"
    );
    let all = sluice.json(&["jobs", "list"]);
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
}

#[sqlx::test(migrations = false)]
async fn the_documented_psql_example_runs_as_written(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "send-email", "echo", &[]);
    let dir = std::env::temp_dir().join(format!("sluice-sql-doc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join(format!(
        "example-{}.sql",
        sluice.url.rsplit('/').next().unwrap()
    ));
    std::fs::write(&script, documented_psql_example()).unwrap();

    let out = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &sluice.url, "-f"])
        .arg(&script)
        .output()
        .expect("run psql (install the PostgreSQL client)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "psql failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let orders: Vec<i64> = sqlx::query_scalar("SELECT id FROM orders ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(orders, [42], "the rolled-back order is gone");
    let jobs = sluice.json(&["jobs", "list"]);
    let jobs = jobs.as_array().unwrap();
    assert_eq!(
        jobs.len(),
        2,
        "the confirmation (once, despite the repeat) and the reminder: {jobs:?}"
    );

    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(
        summary["completed"], 1,
        "the reminder is due tomorrow: {summary}"
    );
    let done = sluice.json(&["jobs", "list", "--state", "completed"]);
    let done = done.as_array().unwrap();
    assert_eq!(done.len(), 1);
    let shown = sluice.json(&["jobs", "show", &done[0]["id"].to_string()]);
    let output: serde_json::Value =
        serde_json::from_str(&output_text(&pool, &shown).await).unwrap();
    assert_eq!(
        output,
        serde_json::json!({"order": 42, "to": "ada@example.com"})
    );
    assert_eq!(shown["output"], output);
    assert_eq!(shown["priority"], 20);
    assert_eq!(shown["idempotency_key"], "order-42-confirmation");
}
