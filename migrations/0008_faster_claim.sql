-- Sluice schema, part 8: a cheaper claim under load (see docs/benchmarks.md).
--
-- * Running jobs are indexed by tenant, so the claim counts each claiming tenant's running
--   jobs with one index scan instead of counting every running job of the fleet. The
--   reaper's scan (state = 'running' AND locked_until < now()) uses the same index.
-- * The claimed rows are updated by primary key (a generic plan of part 7's join could
--   scan the whole pending index for them: 280 ms with 38,000 jobs ready).
-- * The function always runs one cached generic plan, without JIT, with bitmap scans off: index scans
--   mark the entries of rows that left `pending`/`running` dead as they pass them, so a
--   busy queue's partial indexes do not fill with entries every claim must skip again.
-- Semantics are unchanged from part 7 (docs/fairness.md).

CREATE INDEX jobs_running_idx ON sluice.jobs (tenant, locked_until)
    WHERE state = 'running';
DROP INDEX sluice.jobs_lease_idx;

CREATE OR REPLACE FUNCTION sluice.claim(
    p_worker    text,
    p_limit     integer,
    p_lease_us  bigint,
    p_tenants   text[],
    p_job_types text[]
) RETURNS TABLE (
    id           bigint,
    tenant       text,
    job_type     text,
    payload      bytea,
    priority     integer,
    attempt      integer,
    max_attempts integer,
    lease_token  uuid,
    locked_until timestamptz
)
LANGUAGE plpgsql VOLATILE
-- One plan for every call: the custom plans PL/pgSQL would otherwise make for the first
-- calls of each session cost more to plan than the claim costs to run, and they keep
-- none of the index-scan shapes above more reliably. Bitmap scans are off for the same
-- reason as the comment on `budget` says.
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
-- The generic plan's row estimates are pessimistic (unknown limits); with a deep table
-- they pass jit_above_cost, and JIT compiling the plan took ~0.5 s per call.
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM sluice.tenants t
    WHERE t.max_running IS NOT NULL
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND EXISTS (SELECT 1 FROM sluice.jobs j
                  WHERE j.tenant = t.id AND j.state = 'pending' AND j.run_at <= now())
    ORDER BY t.id
    FOR NO KEY UPDATE OF t;

    RETURN QUERY
    WITH RECURSIVE pending_tenants AS (
        -- A loose index scan over jobs_claim_tenant_idx: one probe per tenant with
        -- pending rows, however deep each backlog is.
        (SELECT j.tenant FROM sluice.jobs j
         WHERE j.state = 'pending' AND p_tenants IS NULL
         ORDER BY j.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant FROM sluice.jobs j
                WHERE j.state = 'pending' AND j.tenant > p.tenant
                ORDER BY j.tenant LIMIT 1)
        FROM pending_tenants p
        WHERE p.tenant IS NOT NULL
    ),
    tenant_list AS (
        SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
        UNION
        SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)
    ),
    budget AS (
        SELECT tl.tenant,
               r.n AS running,
               GREATEST(0, LEAST(p_limit, COALESCE(t.max_running - r.n, p_limit))) AS take
        FROM tenant_list tl
        -- Counted per tenant over jobs_running_idx, by index scans (which mark index
        -- entries of finished jobs dead as they pass them; a bitmap scan would not).
        CROSS JOIN LATERAL (
            SELECT count(*)::integer AS n FROM sluice.jobs j
            WHERE j.tenant = tl.tenant AND j.state = 'running'
        ) r
        LEFT JOIN sluice.tenants t ON t.id = tl.tenant
    ),
    candidates AS (
        SELECT c.id, c.priority, c.run_at,
               b.running + row_number() OVER (
                   PARTITION BY b.tenant ORDER BY c.priority DESC, c.run_at, c.id) AS fair
        FROM budget b
        CROSS JOIN LATERAL (
            SELECT j.id, j.priority, j.run_at
            FROM sluice.jobs j
            WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.run_at <= now()
              AND (p_job_types IS NULL OR j.job_type = ANY (p_job_types))
              AND b.take > 0
            ORDER BY j.priority DESC, j.run_at, j.id
            LIMIT b.take
            FOR UPDATE SKIP LOCKED
        ) c
    ),
    picked AS (
        SELECT c.id FROM candidates c
        ORDER BY c.fair, c.priority DESC, c.run_at, c.id
        LIMIT p_limit
    ),
    claimed AS (
        UPDATE sluice.jobs j
        SET state = 'running',
            attempt = j.attempt + 1,
            locked_by = p_worker,
            locked_until = now() + p_lease_us * interval '1 microsecond',
            lease_token = gen_random_uuid(),
            updated_at = now()
        -- By primary key: the ids are already locked (the state test is a guard, not a
        -- search). It compares text so that no plan can match the pending-only partial
        -- indexes' predicate and scan one of them whole for these ids.
        WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
        RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                  j.max_attempts, j.lease_token, j.locked_until
    ),
    history AS (
        INSERT INTO sluice.job_attempts (job_id, attempt, lease_token, worker, started_at)
        -- clock_timestamp(), not now(): a claim may have waited on a capped tenant's
        -- lock since its statement began, and the history must not show it starting
        -- before the completion it waited for.
        SELECT c.id, c.attempt, c.lease_token, p_worker, clock_timestamp() FROM claimed c
    )
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
           c.max_attempts, c.lease_token, c.locked_until
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$$;
