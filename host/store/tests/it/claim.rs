//! Claim order, due times, filters, the claim index, and concurrent claimers.

use std::collections::HashSet;
use std::time::Duration;

use sluice_store::{Completion, JobTypeSpec, Lease, NewComponent, NewJob, RunAt, Store, priority};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::common::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn claims_by_priority_then_run_at_then_id(pool: PgPool) {
    let store = setup(&pool).await;
    // Inserted in an order that differs from the claim order on every key.
    let low = store
        .enqueue(&job("low").with_priority(priority::LOW))
        .await
        .unwrap()
        .id;
    let med_late = store.enqueue(&job("med-late")).await.unwrap().id;
    let med_early = store.enqueue(&job("med-early")).await.unwrap().id;
    let crit = store
        .enqueue(&job("crit").with_priority(priority::CRITICAL))
        .await
        .unwrap()
        .id;
    let med_tie_a = store.enqueue(&job("tie-a")).await.unwrap().id;
    let med_tie_b = store.enqueue(&job("tie-b")).await.unwrap().id;
    let high = store
        .enqueue(&job("high").with_priority(priority::HIGH))
        .await
        .unwrap()
        .id;
    // Medium jobs: distinct run_at for two of them, an exact tie for the other two.
    sqlx::query(
        "UPDATE sluice.jobs SET run_at = CASE id \
           WHEN $1 THEN now() - interval '1 minute' \
           WHEN $2 THEN now() - interval '3 minutes' \
           ELSE now() - interval '2 minutes' END \
         WHERE id = ANY($3)",
    )
    .bind(med_late)
    .bind(med_early)
    .bind(vec![med_late, med_early, med_tie_a, med_tie_b])
    .execute(&pool)
    .await
    .unwrap();

    let expected = vec![crit, high, med_early, med_tie_a, med_tie_b, med_late, low];
    // One batch returns them in claim order...
    let batch: Vec<i64> = store
        .claim(&claim_req("w", 100))
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(batch, expected);

    // ...and so do single claims, one at a time.
    sqlx::query(
        "UPDATE sluice.jobs SET state = 'pending', attempt = 0, locked_by = NULL, \
         locked_until = NULL, lease_token = NULL, attempt_id = NULL, \
         attempt_started_at = NULL, attempt_worker = NULL",
    )
    .execute(&pool)
    .await
    .unwrap();
    let mut one_by_one = Vec::new();
    for _ in 0..expected.len() {
        one_by_one.push(claim_one(&store, "w").await.id);
    }
    assert_eq!(one_by_one, expected);
    assert!(store.claim(&claim_req("w", 10)).await.unwrap().is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn future_job_is_not_claimed_until_due(pool: PgPool) {
    let store = setup(&pool).await;
    let delayed = store
        .enqueue(&job("later").with_run_at(RunAt::Delay(Duration::from_secs(3600))))
        .await
        .unwrap()
        .id;
    let at = db_now(&pool).await + chrono::Duration::days(1);
    let scheduled = store
        .enqueue(
            &job("tomorrow")
                .with_run_at(RunAt::At(at))
                .with_priority(priority::CRITICAL),
        )
        .await
        .unwrap()
        .id;
    let record = store.get(None, scheduled).await.unwrap().unwrap();
    assert_eq!(record.run_at, at);

    assert!(store.claim(&claim_req("w", 10)).await.unwrap().is_empty());

    make_due(&pool, delayed).await;
    let claimed = store.claim(&claim_req("w", 10)).await.unwrap();
    assert_eq!(
        claimed.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![delayed]
    );
    assert_eq!(claimed[0].attempt, 1);
    assert_eq!(claimed[0].max_attempts, 3);
    assert_eq!(claimed[0].payload, b"later");
    assert_eq!(claimed[0].lease.job_id, delayed);

    let running = store.get(None, delayed).await.unwrap().unwrap();
    assert_eq!(running.state, sluice_store::JobState::Running);
    assert_eq!(running.locked_by.as_deref(), Some("w"));
    assert_eq!(running.locked_until, Some(claimed[0].locked_until));
    let now = db_now(&pool).await;
    let lease_left = claimed[0].locked_until - now;
    assert!(
        lease_left > chrono::Duration::seconds(25) && lease_left <= chrono::Duration::seconds(30)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn claim_filters_by_tenant_and_job_type(pool: PgPool) {
    let store = setup(&pool).await;
    let a_email = store.enqueue(&job("a")).await.unwrap().id;
    let a_charge = store
        .enqueue(&NewJob::new(TENANT, ONCE, "b"))
        .await
        .unwrap()
        .id;
    let g_email = store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, "c"))
        .await
        .unwrap()
        .id;

    let mut req = claim_req("w", 10);
    req.tenants = Some(vec![OTHER_TENANT.into()]);
    let got: Vec<i64> = store
        .claim(&req)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(got, vec![g_email]);

    let mut req = claim_req("w", 10);
    req.job_types = Some(vec![ONCE.into()]);
    let got: Vec<i64> = store
        .claim(&req)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(got, vec![a_charge]);

    let mut req = claim_req("w", 10);
    req.tenants = Some(vec![TENANT.into()]);
    req.job_types = Some(vec![ONCE.into(), JOB.into()]);
    let got: Vec<i64> = store
        .claim(&req)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(got, vec![a_email]);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn claim_refuses_bad_requests(pool: PgPool) {
    let store = setup(&pool).await;
    let mut req = claim_req("w", 1);
    req.lease = Duration::ZERO;
    assert!(matches!(
        store.claim(&req).await,
        Err(sluice_store::StoreError::InvalidInput { field: "lease", .. })
    ));
    let req = claim_req("", 1);
    assert!(matches!(
        store.claim(&req).await,
        Err(sluice_store::StoreError::InvalidInput {
            field: "worker",
            ..
        })
    ));
    assert!(store.claim(&claim_req("w", 0)).await.unwrap().is_empty());
}

/// Every reader of pending rows reads a lane's partial index, never the whole table:
/// the tenant-filtered claim scan (of the main lane, migration 0024) reads
/// `jobs_claim_tenant_idx`, and the untenanted depth reads (the
/// worker's next-due wait, the pending count) read `jobs_claim_tenant_idx` and
/// `jobs_flow_idx`, with a tenant or without, planned for the parameter or generic
/// (there is no index of every pending row since migration 0038).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn pending_readers_use_the_lanes_indexes(pool: PgPool) {
    let store = setup(&pool).await;
    let jobs: Vec<NewJob> = (0..5000)
        .map(|i| {
            let tenant = if i % 50 == 0 { OTHER_TENANT } else { TENANT };
            NewJob::new(tenant, JOB, "x").with_priority((i % 4) * 10)
        })
        .collect();
    store.enqueue_many(&jobs).await.unwrap();
    // Many finished rows, so that a plain scan would be the worse choice.
    // Finished by the store's own batched completion, as a worker finishes them.
    let claimed = store.claim(&claim_req("w", 4000)).await.unwrap();
    let outcomes: Vec<(Lease, Completion)> = claimed
        .iter()
        .map(|job| {
            let done = Completion {
                output: b"ok".to_vec(),
                fuel_used: None,
                follow_ups: Vec::new(),
                log: None,
            };
            (job.lease, done)
        })
        .collect();
    let applied = store.complete_many(&outcomes).await.unwrap();
    assert!(applied.iter().all(Result::is_ok), "every lease is current");
    // A few pending jobs in the flow lane, so that both lanes count.
    sqlx::query(
        "UPDATE sluice.jobs SET flow_key = 'k' WHERE id IN \
         (SELECT id FROM sluice.jobs WHERE state = 'pending' ORDER BY id LIMIT 50)",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("VACUUM ANALYZE sluice.jobs")
        .execute(&pool)
        .await
        .unwrap();

    let mut conn = pool.acquire().await.unwrap();
    let plan = query_lines(
        &mut conn,
        "EXPLAIN SELECT id FROM sluice.jobs WHERE state = 'pending' AND run_at <= now() \
         AND flow_key IS NULL AND tenant = ANY('{globex}'::text[]) \
         ORDER BY priority DESC, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED",
    )
    .await;
    assert!(plan.contains("jobs_claim_tenant_idx"), "{plan}");

    let next_due = include_str!("../../sql/depth/next_due.sql");
    let count_pending = include_str!("../../sql/depth/count_pending.sql");
    query_lines(
        &mut conn,
        &format!("PREPARE next_due(text[]) AS {next_due}"),
    )
    .await;
    query_lines(
        &mut conn,
        &format!("PREPARE count_pending(text) AS {count_pending}"),
    )
    .await;
    for mode in ["force_custom_plan", "force_generic_plan"] {
        query_lines(&mut conn, &format!("SET plan_cache_mode = {mode}")).await;
        for call in [
            "next_due(NULL)",
            "next_due('{globex}')",
            "count_pending(NULL)",
            "count_pending('globex')",
        ] {
            let plan = query_lines(&mut conn, &format!("EXPLAIN EXECUTE {call}")).await;
            assert!(!plan.contains("Seq Scan"), "{mode} {call}: {plan}");
            assert!(
                plan.contains("jobs_claim_tenant_idx"),
                "{mode} {call}: {plan}"
            );
            assert!(plan.contains("jobs_flow_idx"), "{mode} {call}: {plan}");
        }
    }
    drop(conn);
    // And they answer what the table holds, both lanes together.
    for tenant in [None, Some(TENANT), Some(OTHER_TENANT)] {
        let pending: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sluice.jobs WHERE state = 'pending' \
             AND ($1::text IS NULL OR tenant = $1)",
        )
        .bind(tenant)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(
            store.count_pending(tenant).await.unwrap(),
            pending,
            "{tenant:?}"
        );
    }
    assert_eq!(store.next_due_in(None).await.unwrap(), Some(Duration::ZERO));
}

/// The rows of one text column `sql` returns on `conn`, a line each (an EXPLAIN's plan;
/// none for PREPARE and SET, which need the same connection as the EXPLAIN).
async fn query_lines(conn: &mut sqlx::PgConnection, sql: &str) -> String {
    let lines: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_all(conn)
        .await
        .unwrap();
    lines.join("\n")
}

/// 16 claimers, each on its own connection, race over 2,000 jobs: every job is claimed
/// exactly once.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn concurrent_claimers_claim_each_job_once(_: PgPoolOptions, opts: PgConnectOptions) {
    let pool = PgPoolOptions::new()
        .max_connections(17)
        .connect_with(opts)
        .await
        .unwrap();
    let store = setup(&pool).await;
    let jobs: Vec<NewJob> = (0..2000).map(|i| job(&i.to_string())).collect();
    let ids: HashSet<i64> = store
        .enqueue_many(&jobs)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids.len(), 2000);

    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for w in 0..16 {
        let store: Store = store.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim(&claim_req(&format!("worker-{w}"), 7))
                    .await
                    .unwrap();
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|j| j.id));
            }
        }));
    }
    let mut all = Vec::new();
    let mut claimers_with_work = 0;
    for t in tasks {
        let mine = t.await.unwrap();
        claimers_with_work += usize::from(!mine.is_empty());
        all.extend(mine);
    }
    assert_eq!(all.len(), 2000, "every job claimed, none twice");
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(unique, ids);
    assert!(claimers_with_work > 1, "claims were spread over workers");

    let (running, attempts): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state = 'running' AND attempt = 1), \
                (SELECT count(*) FROM sluice.job_attempts) FROM sluice.jobs",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((running, attempts), (2000, 2000));
    pool.close().await;
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_host_claims_only_jobs_whose_component_targets_a_contract_it_runs(pool: PgPool) {
    let store = setup(&pool).await;
    // `send-email` points at a 0.1 component (setup); `fetch` at a 0.2 one.
    let newer = store
        .put_component(&NewComponent {
            tenant: TENANT.into(),
            name: "fetcher".into(),
            version: None,
            bytes: b"\0asm fake 0.2 component".to_vec(),
            contract: 2,
        })
        .await
        .unwrap();
    assert_eq!(newer.contract, 2);
    store
        .set_job_type(&JobTypeSpec::new(TENANT, "fetch", newer.id))
        .await
        .unwrap();
    let fetch = store
        .enqueue(&NewJob::new(TENANT, "fetch", "{}"))
        .await
        .unwrap()
        .id;
    let email = store.enqueue(&job("a")).await.unwrap().id;

    let mut old_host = claim_req("old-host", 10);
    old_host.max_contract = 1;
    let got: Vec<i64> = store
        .claim(&old_host)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(got, vec![email]);
    // Left alone, not spent: still pending with no attempt, however often it looks.
    assert!(store.claim(&old_host).await.unwrap().is_empty());
    let (state, attempt): (String, i32) =
        sqlx::query_as("SELECT state::text, attempt FROM sluice.jobs WHERE id = $1")
            .bind(fetch)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((state.as_str(), attempt), ("pending", 0));
    // The five-argument claim of earlier binaries runs 0.1 only.
    let old_binary: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM sluice.claim('old-binary', 10, 60000000, NULL, NULL)")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(old_binary.is_empty(), "{old_binary:?}");

    let mut new_host = claim_req("new-host", 10);
    new_host.max_contract = 2;
    let got: Vec<i64> = store
        .claim(&new_host)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(got, vec![fetch]);
}
