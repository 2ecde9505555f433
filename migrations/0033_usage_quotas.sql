-- Sluice schema, part 33: usage metering per tenant and daily quotas (issue #40,
-- docs/usage.md).
--
-- * sluice.usage_hourly: what each tenant's jobs used, per job type and hour (UTC):
--   runs, fuel, wall time, peak memory, outbound requests and bytes, payload, output and
--   log bytes. Workers add to it in batches (host/store/sql/usage/record.sql, about once a
--   second while they run jobs), never a row per attempt.
-- * tenants.max_attempts_per_day / max_fuel_per_day / max_egress_bytes_per_day: daily
--   quotas (UTC days; NULL: none). `quota` says whether any is set.
-- * tenants.quota_day / day_attempts: the runs the claim started on that day for a tenant
--   under a quota, counted by the claim itself (so an attempts quota is exact); fuel and
--   egress are read from usage_hourly (so those quotas may be passed by what was already
--   running when they were reached).
-- * sluice.quota_room(tenant): how many runs the tenant may still start today (0 once any
--   of its quotas is reached; NULL: none binds); the claim (below) takes at most that
--   many of its jobs. Jobs held by a quota stay pending, no attempt spent, and start
--   again when the day rolls over or the quota is raised.
--
-- Upgrading a live database: a new table and nullable or defaulted columns (no rewrite).
-- Hosts of earlier versions neither meter nor enforce quotas.

CREATE TABLE sluice.usage_hourly (
    tenant text NOT NULL,
    hour timestamptz NOT NULL,
    job_type text NOT NULL,
    runs bigint NOT NULL DEFAULT 0,
    fuel bigint NOT NULL DEFAULT 0,
    wall_ms bigint NOT NULL DEFAULT 0,
    peak_memory_bytes bigint NOT NULL DEFAULT 0,
    http_requests bigint NOT NULL DEFAULT 0,
    http_bytes_out bigint NOT NULL DEFAULT 0,
    http_bytes_in bigint NOT NULL DEFAULT 0,
    payload_bytes bigint NOT NULL DEFAULT 0,
    output_bytes bigint NOT NULL DEFAULT 0,
    log_bytes bigint NOT NULL DEFAULT 0,
    CONSTRAINT usage_hourly_pkey PRIMARY KEY (tenant, hour, job_type)
);
COMMENT ON TABLE sluice.usage_hourly IS
    'Usage per tenant, job type and hour (UTC), added to by workers. See migrations/0033_usage_quotas.sql.';

ALTER TABLE sluice.tenants
    ADD COLUMN max_attempts_per_day bigint
        CONSTRAINT tenants_max_attempts_per_day_check CHECK (max_attempts_per_day > 0),
    ADD COLUMN max_fuel_per_day bigint
        CONSTRAINT tenants_max_fuel_per_day_check CHECK (max_fuel_per_day > 0),
    ADD COLUMN max_egress_bytes_per_day bigint
        CONSTRAINT tenants_max_egress_bytes_per_day_check CHECK (max_egress_bytes_per_day > 0),
    ADD COLUMN quota boolean GENERATED ALWAYS AS
        (max_attempts_per_day IS NOT NULL OR max_fuel_per_day IS NOT NULL
         OR max_egress_bytes_per_day IS NOT NULL) STORED,
    ADD COLUMN quota_day date,
    ADD COLUMN day_attempts bigint NOT NULL DEFAULT 0;
CREATE INDEX tenants_quota_idx ON sluice.tenants (id) WHERE quota;

-- The quota day now (UTC).
CREATE FUNCTION sluice.quota_today() RETURNS date
LANGUAGE sql STABLE AS $$ SELECT (now() AT TIME ZONE 'UTC')::date $$;

-- What a tenant used today, as its quotas count it: runs started (the claim's counter),
-- fuel and outbound bytes (metered).
CREATE FUNCTION sluice.quota_used(p_tenant text)
RETURNS TABLE (attempts bigint, fuel bigint, egress_bytes bigint)
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN t.quota_day = sluice.quota_today() THEN t.day_attempts ELSE 0 END,
           coalesce(u.fuel, 0)::int8, coalesce(u.egress, 0)::int8
    FROM sluice.tenants t
    CROSS JOIN LATERAL (
        SELECT sum(h.fuel) AS fuel, sum(h.http_bytes_out + h.http_bytes_in) AS egress
        FROM sluice.usage_hourly h
        WHERE h.tenant = t.id
          AND h.hour >= sluice.quota_today()::timestamp AT TIME ZONE 'UTC'
          AND (t.max_fuel_per_day IS NOT NULL OR t.max_egress_bytes_per_day IS NOT NULL)
    ) u
    WHERE t.id = p_tenant
$$;

-- How many runs a tenant may still start today: 0 once a quota is reached, else what
-- its attempts quota leaves (NULL: no quota binds).
CREATE FUNCTION sluice.quota_room(p_tenant text) RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN u.fuel >= t.max_fuel_per_day OR u.egress_bytes >= t.max_egress_bytes_per_day
            THEN 0
        WHEN t.max_attempts_per_day IS NOT NULL
            THEN LEAST(GREATEST(0, t.max_attempts_per_day - u.attempts), 2147483647)::int4
    END
    FROM sluice.tenants t, sluice.quota_used(p_tenant) u
    WHERE t.id = p_tenant
$$;

-- The claim: migration 0024's, with the tenants under a quota locked like capped ones,
-- taking at most their quota's room, and counting the runs it starts.
CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[], p_skip_tenants text[])
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
    -- those whose component targets a newer contract than it runs (for a newer host),
    -- those granted secrets it cannot decrypt -- it holds no key (p_secret_keys empty),
    -- or a granted secret of the type's tenant is stored under a key id it does not hold
    -- -- and the webhook deliveries (tenant/sluice.webhook) of tenants with an endpoint
    -- whose signing secret it cannot open (migration 0022). Found by the
    -- components_contract_idx, job_types_secrets_idx and webhook_endpoints key id
    -- probes, empty (and free) when every host is current and holds the keys.
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
                            AND s.key_id <> ALL (p_secret_keys)))
        UNION
        SELECT t.tenant || '/sluice.webhook'
        FROM sluice.webhook_tenants_sealed_elsewhere(p_secret_keys) AS t(tenant)
        WHERE COALESCE(cardinality(p_secret_keys), 0) > 0
        UNION
        -- Paused types (migration 0024): their pending jobs are in the keys' lane, but one
        -- enqueued while the pause committed may still be in the main lane.
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.job_types jt
        WHERE jt.paused);
    -- Webhook deliveries are signed with sealed secrets: a host with no key leaves them
    -- all.
    v_keyless boolean := COALESCE(cardinality(p_secret_keys), 0) = 0;
    -- Paused tenants (migration 0024): none of their jobs is claimed.
    v_paused text[] := ARRAY(SELECT t.id FROM sluice.tenants t WHERE t.paused);
    -- Whether any tenant has a daily quota (migration 0033): if none, the claim counts
    -- no attempts for quotas (a one-time filter; tenants_quota_idx).
    v_quota boolean := EXISTS (SELECT 1 FROM sluice.tenants t WHERE t.quota);
    -- Whether a key of the flow lane is ready: if not, the claim is 0022's statement.
    v_flow boolean := EXISTS (SELECT 1 FROM sluice.flow_keys k WHERE k.ready_at <= now());
    -- The ready keys this claim looks at, locked (see below).
    v_keys bigint[];
BEGIN
    -- Driven from the capped tenants, one probe of the claim index each (a scalar
    -- subquery is never turned into a join): as an EXISTS, the planner could make it a
    -- semi-join that reads every due pending job to find the tenants that have one.
    PERFORM 1
    FROM sluice.tenants t
    WHERE (t.max_running IS NOT NULL OR t.quota)
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND (p_skip_tenants IS NULL OR t.id <> ALL (p_skip_tenants))
      AND NOT t.paused
      AND ((SELECT true FROM sluice.jobs j
            WHERE j.tenant = t.id AND j.state = 'pending' AND j.flow_key IS NULL
              AND j.run_at <= now()
            LIMIT 1)
           OR (v_flow AND (SELECT true FROM sluice.flow_keys k
                           WHERE k.tenant = t.id AND k.ready_at <= now() LIMIT 1)))
    ORDER BY t.id
    FOR NO KEY UPDATE OF t;

    IF v_flow THEN
        -- Types under a fleet-wide cap or rate with a ready key: locked in (tenant, name)
        -- order, after the tenants (every claimer locks in that order, so none waits in
        -- a circle), so their running count and bucket are exact for the statements
        -- below, which take fresh snapshots. Claimers of such a type take turns for the
        -- length of one claim, as for a capped tenant.
        PERFORM 1
        FROM sluice.job_types jt
        WHERE jt.flow AND NOT jt.paused
          AND (jt.max_running IS NOT NULL OR jt.rate_count IS NOT NULL)
          AND (p_tenants IS NULL OR jt.tenant = ANY (p_tenants))
          AND (p_skip_tenants IS NULL OR jt.tenant <> ALL (p_skip_tenants))
          AND (p_job_types IS NULL OR jt.name = ANY (p_job_types))
          AND (SELECT true FROM sluice.flow_keys k
               WHERE k.tenant = jt.tenant AND k.job_type = jt.name AND k.ready_at <= now()
               LIMIT 1)
        ORDER BY jt.tenant, jt.name
        FOR NO KEY UPDATE OF jt;

        -- The keys to look at: for each (tenant, type) with a ready key (a loose index
        -- scan over flow_keys_ready_idx: one probe per pair), the keys ready longest,
        -- as many as the type may still start (its cap, its tokens, p_limit), locked
        -- with SKIP LOCKED: a key another claim holds is its to serve this time. Keys
        -- at their limit or out of tokens are not in the index range read.
        v_keys := ARRAY(
            WITH RECURSIVE pairs AS (
                (SELECT k.tenant, k.job_type FROM sluice.flow_keys k
                 WHERE k.ready_at IS NOT NULL
                 ORDER BY k.tenant, k.job_type LIMIT 1)
                UNION ALL
                SELECT n.tenant, n.job_type
                FROM pairs p
                CROSS JOIN LATERAL (
                    SELECT k.tenant, k.job_type FROM sluice.flow_keys k
                    WHERE k.ready_at IS NOT NULL
                      AND (k.tenant, k.job_type) > (p.tenant, p.job_type)
                    ORDER BY k.tenant, k.job_type LIMIT 1) n
            )
            SELECT fk.id
            FROM pairs p
            JOIN sluice.job_types jt ON jt.tenant = p.tenant AND jt.name = p.job_type
            CROSS JOIN LATERAL (
                SELECT GREATEST(0, LEAST(
                    p_limit,
                    CASE WHEN jt.max_running IS NULL THEN p_limit
                         ELSE jt.max_running
                              - (SELECT count(*)::integer FROM sluice.jobs j
                                 WHERE j.tenant = jt.tenant AND j.state = 'running'
                                   AND j.job_type = jt.name)
                    END,
                    CASE WHEN jt.rate_count IS NULL THEN p_limit
                         ELSE floor(sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                       jt.rate_count, jt.rate_period_ms))::integer
                    END)) AS n
            ) b
            CROSS JOIN LATERAL (
                SELECT k.id FROM sluice.flow_keys k
                WHERE k.tenant = p.tenant AND k.job_type = p.job_type
                  AND k.ready_at IS NOT NULL AND k.ready_at <= now()
                ORDER BY k.ready_at
                LIMIT b.n
                FOR UPDATE SKIP LOCKED
            ) fk
            WHERE NOT jt.paused
              AND (cardinality(v_paused) = 0 OR p.tenant <> ALL (v_paused))
              AND (p_tenants IS NULL OR p.tenant = ANY (p_tenants))
              AND (p_skip_tenants IS NULL OR p.tenant <> ALL (p_skip_tenants))
              AND (p_job_types IS NULL OR p.job_type = ANY (p_job_types))
              AND (cardinality(v_skip) = 0 OR (p.tenant || '/' || p.job_type) <> ALL (v_skip))
              AND (NOT v_keyless OR p.job_type <> 'sluice.webhook'));

        RETURN QUERY
        WITH RECURSIVE pending_tenants AS (
            -- The main lane's tenants, as in the statement below.
            (SELECT j.tenant FROM sluice.jobs j
             WHERE j.state = 'pending' AND j.flow_key IS NULL AND p_tenants IS NULL
             ORDER BY j.tenant LIMIT 1)
            UNION ALL
            SELECT (SELECT j.tenant FROM sluice.jobs j
                    WHERE j.state = 'pending' AND j.flow_key IS NULL AND j.tenant > p.tenant
                    ORDER BY j.tenant LIMIT 1)
            FROM pending_tenants p
            WHERE p.tenant IS NOT NULL
        ),
        key_rows AS (
            SELECT k.id, k.tenant, k.job_type, k.key, k.running, k.tokens, k.refilled_at
            FROM sluice.flow_keys k
            WHERE k.id = ANY (v_keys)
        ),
        -- Each type's room now (fresh snapshot, after the locks): its cap less what runs,
        -- and its whole tokens.
        types AS (
            SELECT jt.tenant, jt.name, jt.max_running_per_key, jt.key_rate_count,
                   jt.key_rate_period_ms, jt.rate_count, jt.rate_period_ms, x.tokens,
                   GREATEST(0, LEAST(
                       p_limit,
                       CASE WHEN jt.max_running IS NULL THEN p_limit
                            ELSE jt.max_running
                                 - (SELECT count(*)::integer FROM sluice.jobs j
                                    WHERE j.tenant = jt.tenant AND j.state = 'running'
                                      AND j.job_type = jt.name)
                       END,
                       CASE WHEN x.tokens IS NULL THEN p_limit
                            ELSE floor(x.tokens)::integer END)) AS room
            FROM (SELECT DISTINCT r.tenant, r.job_type FROM key_rows r) p
            JOIN sluice.job_types jt ON jt.tenant = p.tenant AND jt.name = p.job_type
            CROSS JOIN LATERAL (
                SELECT CASE WHEN jt.rate_count IS NOT NULL
                            THEN sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                    jt.rate_count, jt.rate_period_ms)
                       END AS tokens
            ) x
        ),
        -- Each key's room: the type's, its own limit less what it runs, its whole tokens.
        -- Jobs without a key ('') have no per-key limit or bucket.
        keys AS (
            SELECT r.id, r.tenant, r.job_type, r.key, r.running, ty.room AS type_room,
                   CASE WHEN r.key <> '' THEN ty.max_running_per_key END AS per_key,
                   ty.key_rate_count, ty.key_rate_period_ms, kt.tokens,
                   GREATEST(0, LEAST(
                       ty.room,
                       CASE WHEN r.key <> '' AND ty.max_running_per_key IS NOT NULL
                            THEN ty.max_running_per_key - r.running ELSE p_limit END,
                       CASE WHEN kt.tokens IS NULL THEN p_limit
                            ELSE floor(kt.tokens)::integer END)) AS room
            FROM key_rows r
            JOIN types ty ON ty.tenant = r.tenant AND ty.name = r.job_type
            CROSS JOIN LATERAL (
                SELECT CASE WHEN r.key <> '' AND ty.key_rate_count IS NOT NULL
                            THEN sluice.flow_tokens(r.tokens, r.refilled_at,
                                                    ty.key_rate_count, ty.key_rate_period_ms)
                       END AS tokens
            ) kt
        ),
        -- Each key's due jobs in its own order, up to its room (jobs_flow_idx).
        key_candidates AS (
            SELECT c.id, c.priority, c.run_at, k.tenant, k.job_type, k.id AS key_id,
                   row_number() OVER (PARTITION BY k.id
                                      ORDER BY c.priority DESC, c.run_at, c.id) AS key_rank
            FROM keys k
            CROSS JOIN LATERAL (
                SELECT j.id, j.priority, j.run_at
                FROM sluice.jobs j
                WHERE j.tenant = k.tenant AND j.job_type = k.job_type AND j.flow_key = k.key
                  AND j.state = 'pending' AND j.flow_key IS NOT NULL AND j.run_at <= now()
                  AND k.room > 0
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT k.room
                FOR UPDATE SKIP LOCKED
            ) c
        ),
        -- Keys take turns within their type (every key's first job before any key's
        -- second), up to the type's room.
        key_ranked AS (
            SELECT c.id, c.priority, c.run_at, c.tenant, c.key_id, ty.room,
                   row_number() OVER (PARTITION BY c.tenant, c.job_type
                                      ORDER BY c.key_rank, c.priority DESC, c.run_at, c.id)
                       AS lane_rank
            FROM key_candidates c
            JOIN types ty ON ty.tenant = c.tenant AND ty.name = c.job_type
        ),
        tenant_list AS (
            SELECT l.tenant
            FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
                  UNION
                  SELECT r.tenant FROM key_rows r
                  UNION
                  SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
            WHERE (p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants))
              AND (cardinality(v_paused) = 0 OR l.tenant <> ALL (v_paused))
        ),
        counted AS (
            SELECT tl.tenant, t.max_running,
                   -- A tenant under a daily quota (migration 0033) starts at most what
                   -- its quota has left (NULL: no quota binds).
                   CASE WHEN t.quota THEN sluice.quota_room(t.id) END AS quota_room,
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
                   GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit),
                                  c.quota_room)) AS take
            FROM counted c
        ),
        main_candidates AS (
            SELECT c.id, c.priority, c.run_at, b.tenant, NULL::bigint AS key_id,
                   row_number() OVER (PARTITION BY b.tenant
                                      ORDER BY c.priority DESC, c.run_at, c.id) AS lane_rank
            FROM budget b
            CROSS JOIN LATERAL (
                SELECT j.id, j.priority, j.run_at
                FROM sluice.jobs j
                WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.flow_key IS NULL
                  AND j.run_at <= now()
                  AND (p_job_types IS NULL OR j.job_type = ANY (p_job_types))
                  AND (cardinality(v_skip) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_skip))
                  AND (NOT v_keyless OR j.job_type <> 'sluice.webhook')
                  AND b.take > 0
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT b.take
                FOR UPDATE SKIP LOCKED
            ) c
        ),
        -- Both lanes in one fair ranking (docs/fairness.md): a tenant's key = what it
        -- runs + its rank, the lanes interleaved by their own ranks.
        candidates AS (
            SELECT a.id, a.priority, a.run_at, a.key_id,
                   b.running + row_number() OVER w AS fair, row_number() OVER w AS n, b.take
            FROM (SELECT m.id, m.priority, m.run_at, m.tenant, m.key_id, m.lane_rank
                  FROM main_candidates m
                  UNION ALL
                  SELECT k.id, k.priority, k.run_at, k.tenant, k.key_id, k.lane_rank
                  FROM key_ranked k
                  WHERE k.lane_rank <= k.room) a
            JOIN budget b ON b.tenant = a.tenant
            WINDOW w AS (PARTITION BY a.tenant ORDER BY a.lane_rank, a.priority DESC, a.run_at, a.id)
        ),
        picked AS (
            SELECT c.id, c.key_id FROM candidates c
            WHERE c.n <= c.take
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
                attempt_id = nextval('sluice.attempt_history_id_seq'),
                attempt_started_at = clock_timestamp(),
                attempt_worker = p_worker,
                attempt_fuel = NULL
            WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
            RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                      j.max_attempts, j.lease_token, j.locked_until
        ),
        -- The attempts started, on the quota counters of tenants under a daily quota (their
        -- rows are locked above, so the room read by `counted` is exact).
        quota_counted AS (
            UPDATE sluice.tenants t
            SET quota_day = x.day,
                day_attempts = CASE WHEN t.quota_day = x.day THEN t.day_attempts ELSE 0 END + x.n
            FROM (SELECT c.tenant, count(*) AS n, sluice.quota_today() AS day
                  FROM claimed c WHERE v_quota GROUP BY c.tenant) x
            WHERE t.id = x.tenant AND t.quota
        ),
        taken AS (
            SELECT p.key_id, count(*)::integer AS n
            FROM picked p WHERE p.key_id IS NOT NULL
            GROUP BY p.key_id
        ),
        -- Every key looked at: its running count and bucket, and when to look again --
        -- never (NULL) at its limit (a job ending makes it ready), when a token is back
        -- when out of tokens, by its first pending job when it started nothing (NULL:
        -- none pending), else now, behind the keys that waited longer.
        keys_set AS (
            UPDATE sluice.flow_keys fk
            SET running = fk.running + coalesce(t.n, 0),
                tokens = CASE WHEN k.tokens IS NOT NULL
                              THEN k.tokens - coalesce(t.n, 0) END,
                refilled_at = CASE WHEN k.tokens IS NOT NULL THEN now() END,
                ready_at = CASE
                    WHEN k.type_room = 0 AND coalesce(t.n, 0) = 0 THEN fk.ready_at
                    WHEN k.per_key IS NOT NULL AND fk.running + coalesce(t.n, 0) >= k.per_key
                        THEN NULL
                    WHEN k.tokens IS NOT NULL AND k.tokens - coalesce(t.n, 0) < 1
                        THEN now() + (1 - (k.tokens - coalesce(t.n, 0))) * k.key_rate_period_ms
                                     / k.key_rate_count * interval '1 millisecond'
                    WHEN coalesce(t.n, 0) = 0
                        THEN (SELECT CASE WHEN f.run_at <= now() THEN f.run_at
                                          ELSE (SELECT min(j.run_at) FROM sluice.jobs j
                                                WHERE j.tenant = k.tenant
                                                  AND j.job_type = k.job_type
                                                  AND j.flow_key = k.key
                                                  AND j.state = 'pending'
                                                  AND j.flow_key IS NOT NULL) END
                              FROM (SELECT (SELECT j.run_at FROM sluice.jobs j
                                            WHERE j.tenant = k.tenant
                                              AND j.job_type = k.job_type
                                              AND j.flow_key = k.key
                                              AND j.state = 'pending'
                                              AND j.flow_key IS NOT NULL
                                            ORDER BY j.priority DESC, j.run_at, j.id
                                            LIMIT 1) AS run_at) f)
                    ELSE clock_timestamp()
                END
            FROM keys k
            LEFT JOIN taken t ON t.key_id = k.id
            WHERE fk.id = k.id
        ),
        -- The types' buckets: what this claim took from each.
        types_set AS (
            UPDATE sluice.job_types jt
            SET rate_tokens = ty.tokens - x.n, rate_refilled_at = now()
            FROM types ty
            JOIN (SELECT r.tenant, r.job_type, sum(t.n)::integer AS n
                  FROM taken t JOIN key_rows r ON r.id = t.key_id
                  GROUP BY r.tenant, r.job_type) x
              ON x.tenant = ty.tenant AND x.job_type = ty.name
            WHERE ty.tokens IS NOT NULL AND jt.tenant = ty.tenant AND jt.name = ty.name
        )
        SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
               c.max_attempts, c.lease_token, c.locked_until
        FROM claimed c
        ORDER BY c.priority DESC, c.run_at, c.id;
        RETURN;
    END IF;

    -- No key is ready: migration 0022's statement, for the main lane.

    RETURN QUERY
    WITH RECURSIVE pending_tenants AS (
        -- A loose index scan over jobs_claim_tenant_idx: one probe per tenant with
        -- pending rows, however deep each backlog is.
        (SELECT j.tenant FROM sluice.jobs j
         WHERE j.state = 'pending' AND j.flow_key IS NULL AND p_tenants IS NULL
         ORDER BY j.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant FROM sluice.jobs j
                WHERE j.state = 'pending' AND j.flow_key IS NULL AND j.tenant > p.tenant
                ORDER BY j.tenant LIMIT 1)
        FROM pending_tenants p
        WHERE p.tenant IS NOT NULL
    ),
    tenant_list AS (
        SELECT l.tenant
        FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
              UNION
              SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
        -- A spare slot's claim leaves the tenants already running on that worker.
        WHERE (p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants))
          AND (cardinality(v_paused) = 0 OR l.tenant <> ALL (v_paused))
    ),
    counted AS (
        SELECT tl.tenant, t.max_running,
               -- A tenant under a daily quota (migration 0033) starts at most what its
               -- quota has left (NULL: no quota binds).
               CASE WHEN t.quota THEN sluice.quota_room(t.id) END AS quota_room,
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
               GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit),
                                  c.quota_room)) AS take
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
            WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.flow_key IS NULL
              AND j.run_at <= now()
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
    ),
    -- The attempts started, on the quota counters of tenants under a daily quota
    -- (migration 0033; their rows are locked above, so the room read by `counted` is
    -- exact).
    quota_counted AS (
        UPDATE sluice.tenants t
        SET quota_day = x.day,
            day_attempts = CASE WHEN t.quota_day = x.day THEN t.day_attempts ELSE 0 END + x.n
        FROM (SELECT c.tenant, count(*) AS n, sluice.quota_today() AS day
              FROM claimed c WHERE v_quota GROUP BY c.tenant) x
        WHERE t.id = x.tenant AND t.quota
    )
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
           c.max_attempts, c.lease_token, c.locked_until
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$function$;
