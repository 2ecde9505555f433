-- Sluice schema, part 20: claims and batched completions whose plans do not depend on the
-- planner's statistics.
--
-- sluice.claim(...) plans each statement once per session (force_generic_plan), so a
-- plan made when sluice.jobs was small or had no statistics (a new database, or
-- autovacuum off) stays until something invalidates it. Two such plans were found beside
-- a flood of 3,000 queued jobs (docs/fairness.md, session 19):
-- * the capped-tenant lock (`PERFORM ... FOR NO KEY UPDATE OF t`) ran as a semi-join
--   that read every due pending job of every tenant (762 of them in the trace, 0.43 ms
--   of every claim's 0.93 ms), even with no tenant capped. It is now driven from the
--   capped tenants, one index probe each, whatever the statistics;
-- * the final UPDATE scanned the whole table for the claimed ids (5 ms with 3,000 rows),
--   where it finds them by primary key. The function now runs with enable_seqscan off:
--   every table it reads has an index for what it looks up, and a sequential scan is
--   still taken where none applies;
-- * batched completions ran the same way: their statement now calls
--   sluice.complete_batch(...), the same text as a function with the same settings, and
--   so do batched failures (sluice.fail_batch) and the heartbeat
--   (sluice.heartbeat_batch), which find their rows by the same primary-key look-up.
--
-- Upgrading a live database: CREATE OR REPLACE FUNCTION and new functions only;
-- sessions replan the claim on their next call. Hosts of the previous version keep
-- sending the old statements, which still work.

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    -- The job types (tenant/name; a tenant id holds no `/`) this host must leave pending:
    -- those whose component targets a newer contract than it runs (for a newer host), and
    -- those granted secrets it cannot decrypt -- it holds no key (p_secret_keys empty),
    -- or a granted secret of the type's tenant is stored under a key id it does not hold.
    -- Found by the components_contract_idx and job_types_secrets_idx probes, empty (and
    -- free) when every host is current and holds the key.
    v_skip text[] := ARRAY(
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.components co
        JOIN sluice.job_types jt ON jt.component_id = co.id
        WHERE co.contract > p_max_contract
        UNION
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.job_types jt
        WHERE cardinality(jt.secrets) > 0
          AND (COALESCE(cardinality(p_secret_keys), 0) = 0
               OR EXISTS (SELECT 1 FROM sluice.secrets s
                          WHERE s.tenant = jt.tenant AND s.name = ANY (jt.secrets)
                            AND s.key_id <> ALL (p_secret_keys))));
    -- Webhook deliveries are signed with sealed secrets: a host with no key leaves them.
    v_keyless boolean := COALESCE(cardinality(p_secret_keys), 0) = 0;
BEGIN
    -- Driven from the capped tenants, one probe of the claim index each (a scalar
    -- subquery is never turned into a join): as an EXISTS, the planner could make it a
    -- semi-join that reads every due pending job to find the tenants that have one.
    PERFORM 1
    FROM sluice.tenants t
    WHERE t.max_running IS NOT NULL
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND (SELECT true FROM sluice.jobs j
           WHERE j.tenant = t.id AND j.state = 'pending' AND j.run_at <= now()
           LIMIT 1)
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
              AND (cardinality(v_skip) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_skip))
              AND (NOT v_keyless OR j.job_type <> 'sluice.webhook')
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
$function$;

-- Batched completions (host/store/sql/finish/complete_many.sql calls this), in a
-- function for the same reason: run from a prepared statement, the UPDATE's generic plan
-- was a scan of the whole table for the batch's ids whenever sluice.jobs had looked
-- small when the session first planned it (0.4 ms a batch beside the flood above, 4 times
-- what the primary-key probes take). Same text, same result, same parameters in order.
CREATE FUNCTION sluice.complete_batch(p_ids bigint[], p_tokens uuid[], p_outputs bytea[],
                                      p_fuel bigint[], p_logs bytea[], p_dropped bigint[])
 RETURNS TABLE(id bigint)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH done AS (
        UPDATE sluice.jobs j
        SET state = 'completed', output = (p_outputs)[width_bucket(j.id, p_ids)],
            finished_at = now(), updated_at = now(),
            attempt_fuel = (p_fuel)[width_bucket(j.id, p_ids)],
            locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running'
          AND j.lease_token = (p_tokens)[width_bucket(j.id, p_ids)]
        RETURNING j.id, j.attempt, j.attempt_id
    ),
    logged AS (
        INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
        SELECT d.id, d.attempt_id, d.attempt, l.log, l.dropped
        FROM done d
        CROSS JOIN LATERAL (
            SELECT (p_logs)[n] AS log, coalesce((p_dropped)[n], 0) AS dropped
            FROM (SELECT width_bucket(d.id, p_ids) AS n) p
        ) l
        WHERE p_logs IS NOT NULL AND l.log IS NOT NULL
    )
    SELECT id FROM done;
END
$function$;

-- Batched failures (host/store/sql/finish/fail_many.sql calls this) and the heartbeat
-- (host/store/sql/claim/heartbeat.sql), for the same reason as sluice.complete_batch:
-- the same text, the same result, the parameters in the same order.
CREATE FUNCTION sluice.fail_batch(p_ids bigint[], p_tokens uuid[], p_errors text[],
                                  p_fatal boolean[], p_base_us double precision[],
                                  p_cap_us double precision[], p_jitter double precision[],
                                  p_fuel bigint[], p_channel text, p_logs bytea[],
                                  p_dropped bigint[])
 RETURNS TABLE(id bigint, state sluice.job_state, run_at timestamp with time zone, notified bigint)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH held AS (
        SELECT j.id, i.error, i.fuel, i.log, i.dropped,
               CASE WHEN j.cancel_requested THEN 'cancelled'
                    WHEN i.fatal OR j.attempt >= j.max_attempts THEN 'dead'
                    ELSE 'pending'
               END::sluice.job_state AS next_state,
               now() + least(i.cap_us, i.base_us * power(2::float8, least(j.attempt - 1, 62)))
                     * (1 + i.jitter * (2 * random() - 1))
                     * interval '1 microsecond' AS retry_at,
               attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
        FROM sluice.jobs j
        -- The row's own failure, at its id's position in the arrays.
        CROSS JOIN LATERAL (
            SELECT (p_tokens)[n] AS token, (p_errors)[n] AS error, (p_fatal)[n] AS fatal,
                   (p_base_us)[n] AS base_us, (p_cap_us)[n] AS cap_us,
                   (p_jitter)[n] AS jitter, (p_fuel)[n] AS fuel,
                   (p_logs)[n] AS log, coalesce((p_dropped)[n], 0) AS dropped
            FROM (SELECT width_bucket(j.id, p_ids) AS n) p
        ) i
        -- By primary key, for the reasons given in finish/complete_many.sql.
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running' AND j.lease_token = i.token
        ORDER BY j.id
        FOR UPDATE OF j
    ),
    moved AS (
        UPDATE sluice.jobs j
        SET state = h.next_state,
            run_at = CASE WHEN h.next_state = 'pending' THEN h.retry_at ELSE j.run_at END,
            finished_at = CASE WHEN h.next_state = 'pending' THEN NULL ELSE now() END,
            last_error = h.error,
            locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
            updated_at = now(),
            -- The attempt leaves the row: it is archived below.
            attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
        FROM held h
        WHERE j.id = h.id AND j.state::text = 'running' AND j.lease_token = h.lease_token
        RETURNING j.id, j.state, j.run_at, h.error, h.fuel, h.log, h.dropped,
                  h.attempt AS ran_attempt, h.attempt_id AS ran_id,
                  h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
                  h.lease_token AS ran_token
    ),
    -- Every running row has its attempt on it (the jobs_attempt_on_row check), so every
    -- moved row archives one, finished now.
    history AS (
        INSERT INTO sluice.attempt_history
            (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
        SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
               CASE m.state WHEN 'pending' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'cancelled' END,
               m.error, m.fuel
        FROM moved m
    ),
    logged AS (
        INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
        SELECT m.id, m.ran_id, m.ran_attempt, m.log, m.dropped
        FROM moved m
        WHERE m.log IS NOT NULL
    ),
    notified AS (
        SELECT pg_notify(p_channel, CASE WHEN n.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM n.at - now()) * 1000000)::int8::text
                             END)
        FROM (SELECT min(m.run_at) AS at FROM moved m WHERE m.state = 'pending') n
        WHERE n.at IS NOT NULL
    )
    SELECT id, state, run_at, (SELECT count(*) FROM notified) AS notified FROM moved;
END
$function$;

CREATE FUNCTION sluice.heartbeat_batch(p_worker text, p_ids bigint[], p_tokens uuid[],
                                       p_lease_us bigint)
 RETURNS TABLE(id bigint, cancel_requested boolean)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH registry AS (
        UPDATE sluice.workers SET last_heartbeat = now()
        WHERE sluice.workers.id = p_worker AND stopped_at IS NULL
    ),
    extended AS (
        UPDATE sluice.jobs j
        SET locked_until = now() + p_lease_us * interval '1 microsecond', updated_at = now()
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running'
          AND j.lease_token = (p_tokens)[width_bucket(j.id, p_ids)] AND j.locked_by = p_worker
        RETURNING j.id, j.cancel_requested
    )
    SELECT e.id, e.cancel_requested FROM extended e;
END
$function$;
