-- Sluice schema, part 9: the attempt history folded into the job row on the hot path.
--
-- Until part 8 every claim inserted an attempt-history row and every completion updated
-- it: two more row versions and index entries per job, about 40% of the database's work
-- for a short job (docs/benchmarks.md). Now the row itself holds its current attempt:
--
-- * the claim sets attempt_id (from the history's sequence), attempt_started_at and
--   attempt_worker on the job row; nothing else is written;
-- * a completion leaves the attempt on the (completed) row and adds attempt_fuel;
-- * every other end of an attempt (retry, dead, released, cancelled, lease expired)
--   moves it into sluice.attempt_history in the statement that ends it, and clears it
--   from the row.
--
-- So a job's attempts are the rows of attempt_history plus, while it runs or once it
-- completed, the one on the job row. The view sluice.job_attempts shows them together,
-- with the columns the table had before, so every reader (jobs show, the HTTP API, SQL
-- users) sees the same history as before. The ids come from one sequence, in claim
-- order. Upgrading: stop the workers, migrate, start the new binary (an attempt claimed
-- by an old binary is converted below; an old binary cannot finish attempts any more).

ALTER TABLE sluice.job_attempts RENAME TO attempt_history;
ALTER SEQUENCE sluice.job_attempts_id_seq RENAME TO attempt_history_id_seq;

ALTER TABLE sluice.jobs
    ADD COLUMN attempt_id         bigint,
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_worker     text,
    ADD COLUMN attempt_fuel       bigint CONSTRAINT jobs_attempt_fuel_nonnegative CHECK (attempt_fuel >= 0);

-- Attempts that were running when this migration ran move onto their rows.
UPDATE sluice.jobs j
SET attempt_id = a.id, attempt_started_at = a.started_at, attempt_worker = a.worker
FROM sluice.attempt_history a
WHERE j.state = 'running' AND a.job_id = j.id AND a.lease_token = j.lease_token
  AND a.finished_at IS NULL;
DELETE FROM sluice.attempt_history a USING sluice.jobs j WHERE j.attempt_id = a.id;
-- A running row without an open history row (none is expected) gets a fresh attempt.
UPDATE sluice.jobs
SET attempt_id = nextval('sluice.attempt_history_id_seq'),
    attempt_started_at = updated_at, attempt_worker = locked_by
WHERE state = 'running' AND attempt_id IS NULL;

ALTER TABLE sluice.jobs ADD CONSTRAINT jobs_attempt_on_row CHECK (
    (attempt_id IS NULL) = (attempt_started_at IS NULL)
    AND (attempt_id IS NULL) = (attempt_worker IS NULL)
    AND CASE state WHEN 'running' THEN attempt_id IS NOT NULL
                   WHEN 'completed' THEN true
                   ELSE attempt_id IS NULL END
);

CREATE VIEW sluice.job_attempts AS
SELECT h.id, h.job_id, h.attempt, h.lease_token, h.worker, h.started_at, h.finished_at,
       h.outcome, h.error, h.fuel_used
FROM sluice.attempt_history h
UNION ALL
SELECT j.attempt_id, j.id, j.attempt, j.lease_token, j.attempt_worker, j.attempt_started_at,
       CASE WHEN j.state = 'completed' THEN j.finished_at END,
       CASE WHEN j.state = 'completed' THEN 'completed' END,
       NULL::text, j.attempt_fuel
FROM sluice.jobs j
WHERE j.attempt_id IS NOT NULL;

COMMENT ON VIEW sluice.job_attempts IS
    'Every attempt of every job: the history table plus the attempt a running or completed job holds on its row.';

-- The claim of part 8, writing the attempt onto the row instead of a history row, and
-- counting a tenant's running jobs only where a cap or a second tenant needs the count.
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
    counted AS (
        SELECT tl.tenant, t.max_running,
               -- Counted per tenant over jobs_running_idx, by index scans (which mark
               -- index entries of finished jobs dead as they pass them; a bitmap scan
               -- would not) -- but only where the count changes the answer: for a cap,
               -- or to interleave several tenants. One uncapped tenant's claim would
               -- otherwise visit every job it runs (O(running) per claim).
               CASE WHEN t.max_running IS NOT NULL
                         OR (SELECT count(*) FROM tenant_list) > 1
                    THEN (SELECT count(*)::integer FROM sluice.jobs j
                          WHERE j.tenant = tl.tenant AND j.state = 'running')
                    ELSE 0
               END AS running
        FROM tenant_list tl
        LEFT JOIN sluice.tenants t ON t.id = tl.tenant
    ),
    budget AS (
        SELECT c.tenant, c.running,
               GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit))) AS take
        FROM counted c
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
            updated_at = now(),
            -- The attempt lives on the row until it ends (see the top of this file).
            -- clock_timestamp(), not now(): a claim may have waited on a capped
            -- tenant's lock since its statement began, and the history must not show
            -- it starting before the completion it waited for.
            attempt_id = nextval('sluice.attempt_history_id_seq'),
            attempt_started_at = clock_timestamp(),
            attempt_worker = p_worker,
            attempt_fuel = NULL
        -- By primary key: the ids are already locked (the state test is a guard, not a
        -- search). It compares text so that no plan can match the pending-only partial
        -- indexes' predicate and scan one of them whole for these ids.
        WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
        RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                  j.max_attempts, j.lease_token, j.locked_until
    )
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
           c.max_attempts, c.lease_token, c.locked_until
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$$;
