-- W3C trace context carried through the queue (issue #40, docs/observability.md).
--
-- * sluice.jobs and sluice.webhook_events keep the `traceparent` and `tracestate` a job
--   or event was enqueued with (NULL: none). Nullable, no default, no CHECK: adding them
--   rewrites nothing, and the writers validate (the host in Rust, the SQL functions
--   below with sluice.valid_traceparent).
-- * sluice.enqueue_jobs(...) takes them as two more arrays (sixteen parameters); the
--   fourteen-parameter form calls it without them, so earlier hosts keep working.
-- * sluice.claim(...) returns them, so an attempt continues its job's trace without a
--   read of its own, and `due_at` (the run_at it was claimed at: the attempt span's
--   wait before start): dropped and created again, as its result type changes (earlier
--   hosts select its columns by name; the statement is otherwise migration 0033's).
-- * sluice.enqueue(...) and sluice.send_event(...) take `traceparent` and `tracestate`
--   (default NULL, so existing calls keep working; each replaces its shorter form, as
--   overloads with defaults would make the shorter calls ambiguous). An invalid
--   traceparent is refused by name; an invalid tracestate is dropped (W3C: a vendor
--   must not fail on it).
-- * webhook deliveries carry their event's context (sluice.webhook_enqueue).

ALTER TABLE sluice.jobs ADD COLUMN traceparent text, ADD COLUMN tracestate text;
ALTER TABLE sluice.webhook_events ADD COLUMN traceparent text, ADD COLUMN tracestate text;

-- W3C Trace Context level 2: version 00 is exactly 55 characters; a later version (not
-- ff) may append fields after a `-`; lowercase hex; neither id all zeros.
CREATE FUNCTION sluice.valid_traceparent(p text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p IS NOT NULL
       AND (p ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
            OR (p ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$'
                AND left(p, 2) NOT IN ('00', 'ff')))
       AND substr(p, 4, 32) <> repeat('0', 32)
       AND substr(p, 37, 16) <> repeat('0', 16)
$$;
COMMENT ON FUNCTION sluice.valid_traceparent(text) IS
    'Whether a text is a W3C traceparent Sluice accepts. See migrations/0034_trace_context.sql.';

-- A tracestate worth keeping: at most 512 characters and 32 `key=value` members.
CREATE FUNCTION sluice.valid_tracestate(p text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p IS NOT NULL AND char_length(p) <= 512
       AND cardinality(string_to_array(p, ',')) <= 32
       AND p ~ '^[ \t]*[a-z0-9*/@_-]+=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e]([ \t]*,[ \t]*([a-z0-9*/@_-]+=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e])?)*[ \t]*$'
$$;
COMMENT ON FUNCTION sluice.valid_tracestate(text) IS
    'Whether a text is a W3C tracestate Sluice keeps (otherwise it is dropped). See migrations/0034_trace_context.sql.';

DROP FUNCTION sluice.claim(text, integer, bigint, text[], text[], smallint, text[], text[]);
CREATE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[], p_skip_tenants text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone, traceparent text, tracestate text, due_at timestamp with time zone)
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
                      j.max_attempts, j.lease_token, j.locked_until, j.traceparent, j.tracestate
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
               c.max_attempts, c.lease_token, c.locked_until, c.traceparent, c.tracestate, c.run_at
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
                  j.max_attempts, j.lease_token, j.locked_until, j.traceparent, j.tracestate
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
           c.max_attempts, c.lease_token, c.locked_until, c.traceparent, c.tracestate, c.run_at
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$function$;

-- The seven-parameter claim (migration 0021's form, which the five- and six-parameter
-- ones call) returns the nine columns it always did, named, not `*`.
CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE sql
AS $function$
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority, c.attempt, c.max_attempts,
           c.lease_token, c.locked_until
    FROM sluice.claim(p_worker, p_limit, p_lease_us, p_tenants, p_job_types,
                      p_max_contract, p_secret_keys, NULL::text[]) c;
$function$;

CREATE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[], p_traceparent text[], p_tracestate text[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE plpgsql
AS $function$
BEGIN
    -- p_delay_us .. p_key_scope may be NULL instead of an array when no row sets them:
    -- SRFs in one SELECT list run in lockstep and a shorter (or NULL) array is padded
    -- with NULLs, so a client need not send 100k defaults.
    IF p_idempotency_key IS NULL THEN
        RETURN QUERY
        WITH groups AS (
            SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
                   t.id IS NOT NULL AS tenant_ok,
                   jt.name IS NOT NULL AS type_ok,
                   coalesce(t.max_payload_bytes, p_default_max_payload) AS payload_limit
            FROM (
                SELECT u.tenant, u.job_type, min(u.ord) AS first_ord, max(u.size) AS max_size
                FROM (SELECT unnest(p_tenant) AS tenant, unnest(p_job_type) AS job_type,
                             octet_length(unnest(p_payload))::int8 AS size,
                             generate_series(1::int8, cardinality(p_tenant)) AS ord) u
                GROUP BY u.tenant, u.job_type
            ) g
            LEFT JOIN sluice.tenants t ON t.id = g.tenant
            LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
        ),
        first_problem AS (
            SELECT g.first_ord,
                   CASE WHEN NOT g.tenant_ok THEN 'tenant'
                        WHEN NOT g.type_ok THEN 'job_type'
                        ELSE 'payload' END AS problem,
                   g.max_size, g.payload_limit
            FROM groups g
            WHERE NOT g.tenant_ok OR NOT g.type_ok OR g.max_size > g.payload_limit
            ORDER BY g.first_ord
            LIMIT 1
        ),
        new_ids AS (
            SELECT array_agg(coalesce(p_id[g.i], nextval('sluice.jobs_id_seq'))) AS a
            FROM generate_series(1, cardinality(p_tenant)) AS g(i)
            WHERE NOT EXISTS (SELECT 1 FROM first_problem)
            HAVING count(*) > 0
        ),
        inserted AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, key_scope, parent_id, parent_seq, flow_key,
                                     traceparent, tracestate)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END),
                   u.traceparent, u.tracestate
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq,
                         unnest(p_traceparent) AS traceparent,
                         unnest(p_tracestate) AS tracestate
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
        ),
        -- The earliest due time of the batch, from the inputs (so no CTE reads back a
        -- payload): every row is inserted or the statement fails.
        first_due AS (
            SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
            FROM (SELECT unnest(n.a) AS id, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at
                  FROM new_ids n) u
        ),
        notified AS (
            SELECT pg_notify('sluice_jobs',
                             CASE WHEN f.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text
                             END)
            FROM first_due f
            WHERE f.at IS NOT NULL
        )
        SELECT p.problem, p.first_ord, p.max_size, p.payload_limit,
               (SELECT n.a FROM new_ids n),
               NULL::int8[], NULL::int8[]
        FROM (SELECT count(*) AS sent FROM notified) one
        LEFT JOIN first_problem p ON true;
    ELSE
        RETURN QUERY
        WITH groups AS (
            SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
                   t.id IS NOT NULL AS tenant_ok,
                   jt.name IS NOT NULL AS type_ok,
                   coalesce(t.max_payload_bytes, p_default_max_payload) AS payload_limit
            FROM (
                SELECT u.tenant, u.job_type, min(u.ord) AS first_ord, max(u.size) AS max_size
                FROM (SELECT unnest(p_tenant) AS tenant, unnest(p_job_type) AS job_type,
                             octet_length(unnest(p_payload))::int8 AS size,
                             generate_series(1::int8, cardinality(p_tenant)) AS ord) u
                GROUP BY u.tenant, u.job_type
            ) g
            LEFT JOIN sluice.tenants t ON t.id = g.tenant
            LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
        ),
        first_problem AS (
            SELECT g.first_ord,
                   CASE WHEN NOT g.tenant_ok THEN 'tenant'
                        WHEN NOT g.type_ok THEN 'job_type'
                        ELSE 'payload' END AS problem,
                   g.max_size, g.payload_limit
            FROM groups g
            WHERE NOT g.tenant_ok OR NOT g.type_ok OR g.max_size > g.payload_limit
            ORDER BY g.first_ord
            LIMIT 1
        ),
        new_ids AS (
            SELECT array_agg(coalesce(p_id[g.i], nextval('sluice.jobs_id_seq'))) AS a
            FROM generate_series(1, cardinality(p_tenant)) AS g(i)
            WHERE NOT EXISTS (SELECT 1 FROM first_problem)
            HAVING count(*) > 0
        ),
        ins_plain AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, key_scope, parent_id, parent_seq, flow_key,
                                     traceparent, tracestate)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END),
                   u.traceparent, u.tracestate
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq,
                         unnest(p_traceparent) AS traceparent,
                         unnest(p_tracestate) AS tracestate
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
            WHERE u.idempotency_key IS NULL
        ),
        keyless_first AS (
            SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
            FROM (SELECT unnest(n.a) AS id, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_idempotency_key) AS idempotency_key
                  FROM new_ids n) u
            WHERE u.idempotency_key IS NULL
        ),
        ins_keyed AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, idempotency_key, key_scope,
                                     parent_id, parent_seq, flow_key,
                                     traceparent, tracestate)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts), u.idempotency_key,
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END),
                   u.traceparent, u.tracestate
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq,
                         unnest(p_traceparent) AS traceparent,
                         unnest(p_tracestate) AS tracestate
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
            WHERE u.idempotency_key IS NOT NULL
            ON CONFLICT DO NOTHING
            RETURNING sluice.jobs.id, sluice.jobs.run_at
        ),
        -- Rows skipped by ON CONFLICT, with the job now holding their key. This reads the
        -- statement's snapshot: a holder that committed after it began is not seen and
        -- comes back NULL, for the caller to retry in a new statement.
        dups AS (
            SELECT u.ord,
                   (SELECT j.id FROM sluice.jobs j
                    WHERE j.tenant = u.tenant AND j.idempotency_key = u.idempotency_key
                      AND (j.key_scope = 'retained' OR j.state IN ('pending', 'running', 'waiting'))) AS holder
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_idempotency_key) AS idempotency_key,
                         generate_series(1::int8, cardinality(n.a)) AS ord
                  FROM new_ids n) u
            WHERE u.idempotency_key IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM ins_keyed k WHERE k.id = u.id)
        ),
        first_due AS (
            SELECT least((SELECT k.at FROM keyless_first k),
                         (SELECT min(k.run_at) FROM ins_keyed k)) AS at
        ),
        notified AS (
            SELECT pg_notify('sluice_jobs',
                             CASE WHEN f.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text
                             END)
            FROM first_due f
            WHERE f.at IS NOT NULL
        )
        SELECT p.problem, p.first_ord, p.max_size, p.payload_limit,
               (SELECT n.a FROM new_ids n),
               (SELECT array_agg(d.ord ORDER BY d.ord) FROM dups d),
               (SELECT array_agg(d.holder ORDER BY d.ord) FROM dups d)
        FROM (SELECT count(*) AS sent FROM notified) one
        LEFT JOIN first_problem p ON true;
    END IF;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, p_concurrency_key, p_id,
                                      NULL::text[], NULL::text[]);
$function$;

-- The thirteen- and twelve-parameter forms (migrations 0024, 0014: the statements a
-- batch without keys or reserved ids uses) call the sixteen-parameter one directly, not
-- through the fourteen-parameter form, so they pay no second wrapper.
CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, p_concurrency_key, NULL::int8[],
                                      NULL::text[], NULL::text[]);
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, NULL::text[], NULL::int8[],
                                      NULL::text[], NULL::text[]);
$function$;

COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint, bigint[], integer[], text[], bigint[], text[], text[]) IS
    'The one INSERT into sluice.jobs: a batch of jobs as arrays, all or none, with idempotency keys, parents, concurrency keys, reserved ids, trace context and one wake-up notice. Used by the Rust enqueue, follow-up jobs, sluice.enqueue(...) and the scheduler. See migrations/0011_one_enqueue.sql, 0014_follow_up_jobs.sql, 0024_flow_control.sql, 0027_durable_waits.sql and 0034_trace_context.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint, bigint[], integer[], text[], bigint[]) IS
    'sluice.enqueue_jobs(...) without trace context (the form of migration 0027). See migrations/0034_trace_context.sql.';

DROP FUNCTION sluice.enqueue(text, text, jsonb, integer, timestamptz, text, integer, text, text);
CREATE FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer DEFAULT 10, run_at timestamp with time zone DEFAULT now(), idempotency_key text DEFAULT NULL::text, max_attempts integer DEFAULT NULL::integer, key_scope text DEFAULT 'retained'::text, concurrency_key text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    v_run_at timestamptz := coalesce(enqueue.run_at, now());
    v_result record;
    v_round  integer;
BEGIN
    IF enqueue.tenant IS NULL THEN
        RAISE EXCEPTION 'invalid tenant: must not be NULL'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'tenant';
    END IF;
    IF enqueue.job_type IS NULL OR char_length(enqueue.job_type) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'invalid job_type: a job type name must be 1 to 128 characters, got %',
                coalesce(char_length(enqueue.job_type)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'job_type';
    END IF;
    IF enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'invalid payload: must not be NULL (use ''{}''::jsonb for an empty one)'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'payload';
    END IF;
    IF enqueue.priority IS NULL OR enqueue.priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'invalid priority: % is outside -32768..=32767; use the labels low=0, medium=10, high=20, critical=30',
                coalesce(enqueue.priority::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'priority';
    END IF;
    IF NOT isfinite(v_run_at)
       OR v_run_at NOT BETWEEN timestamptz '1970-01-01 00:00:00+00'
                           AND timestamptz '9999-12-31 23:59:59.999999+00' THEN
        RAISE EXCEPTION 'invalid run_at: % is outside the accepted range 1970-01-01 00:00:00+00 .. 9999-12-31 23:59:59.999999+00',
                v_run_at
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'run_at';
    END IF;
    IF enqueue.max_attempts IS NOT NULL AND enqueue.max_attempts < 1 THEN
        RAISE EXCEPTION 'invalid max_attempts: must be at least 1 (1 means never retried), got %',
                enqueue.max_attempts
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'max_attempts';
    END IF;
    IF enqueue.idempotency_key IS NOT NULL
       AND char_length(enqueue.idempotency_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'invalid idempotency_key: must be 1 to 255 characters, got %',
                char_length(enqueue.idempotency_key)
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'idempotency_key';
    END IF;
    IF enqueue.concurrency_key IS NOT NULL
       AND char_length(enqueue.concurrency_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'invalid concurrency_key: must be 1 to 255 characters, got %',
                char_length(enqueue.concurrency_key)
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'concurrency_key';
    END IF;
    IF enqueue.key_scope IS NULL OR enqueue.key_scope NOT IN ('retained', 'unfinished') THEN
        RAISE EXCEPTION 'invalid key_scope: % is not a key scope; use ''retained'' or ''unfinished''',
                coalesce(quote_literal(enqueue.key_scope), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'key_scope';
    END IF;

    IF enqueue.traceparent IS NOT NULL AND NOT sluice.valid_traceparent(enqueue.traceparent) THEN
        RAISE EXCEPTION 'invalid traceparent: % is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero)',
                quote_literal(left(enqueue.traceparent, 64))
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'traceparent';
    END IF;

    -- The unique index jobs_idempotency_key_uidx is the authority. A holder that commits
    -- while a round waits is skipped by ON CONFLICT and unseen by its snapshot (holder
    -- NULL); the next round is a new statement (a new snapshot under READ COMMITTED)
    -- and finds it, or inserts if the holder freed its key in between.
    FOR v_round IN 1..16 LOOP
        SELECT * INTO v_result
        FROM sluice.enqueue_jobs(
            ARRAY[enqueue.tenant], ARRAY[enqueue.job_type],
            ARRAY[convert_to(enqueue.payload::text, 'UTF8')],
            ARRAY[enqueue.priority::smallint], NULL, ARRAY[v_run_at],
            ARRAY[enqueue.max_attempts],
            CASE WHEN enqueue.idempotency_key IS NOT NULL THEN ARRAY[enqueue.idempotency_key] END,
            ARRAY[enqueue.key_scope],
            coalesce(nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                     1048576),
            NULL, NULL,
            CASE WHEN enqueue.concurrency_key IS NOT NULL THEN ARRAY[enqueue.concurrency_key] END,
            NULL,
            CASE WHEN enqueue.traceparent IS NOT NULL THEN ARRAY[enqueue.traceparent] END,
            CASE WHEN enqueue.traceparent IS NOT NULL AND sluice.valid_tracestate(enqueue.tracestate)
                 THEN ARRAY[enqueue.tracestate] END);
        IF v_result.problem = 'tenant' THEN
            RAISE EXCEPTION 'unknown tenant "%": create it first (sluice tenants create %)',
                    enqueue.tenant, enqueue.tenant
                USING ERRCODE = 'foreign_key_violation', COLUMN = 'tenant';
        ELSIF v_result.problem = 'job_type' THEN
            RAISE EXCEPTION 'unknown job type "%" for tenant "%": register it with a component first',
                    enqueue.job_type, enqueue.tenant
                USING ERRCODE = 'foreign_key_violation', COLUMN = 'job_type';
        ELSIF v_result.problem IS NOT NULL THEN
            RAISE EXCEPTION 'payload is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                    v_result.payload_size, v_result.payload_limit
                USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload';
        END IF;
        IF v_result.dup_ords IS NULL THEN
            RETURN v_result.ids[1]; -- created
        END IF;
        IF v_result.dup_holders[1] IS NOT NULL THEN
            RETURN v_result.dup_holders[1]; -- a duplicate: nothing created
        END IF;
    END LOOP;
    RAISE EXCEPTION 'idempotency key "%" of tenant "%" kept changing hands during enqueue; retry later',
            enqueue.idempotency_key, enqueue.tenant
        USING ERRCODE = 'serialization_failure', COLUMN = 'idempotency_key';
END
$function$;
REVOKE EXECUTE ON FUNCTION sluice.enqueue(text, text, jsonb, integer, timestamptz, text, integer, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION sluice.enqueue(text, text, jsonb, integer, timestamptz, text, integer, text, text, text, text) IS 'Enqueue one Sluice job inside the caller''s transaction; returns the job id (the existing one for a duplicate idempotency key). See docs/enqueue-from-sql.md.';

DROP FUNCTION sluice.send_event(text, text, jsonb, text);
CREATE FUNCTION sluice.send_event(tenant text, event_type text, payload jsonb, idempotency_key text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_variable
DECLARE
    v_limit bigint;
    v_id    bigint;
    v_body  bytea;
BEGIN
    SELECT coalesce(t.max_payload_bytes,
                    nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                    1048576)
      INTO v_limit
      FROM sluice.tenants t WHERE t.id = send_event.tenant;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown tenant "%": create it first (sluice tenants create %)',
                send_event.tenant, send_event.tenant
            USING ERRCODE = 'foreign_key_violation', COLUMN = 'tenant';
    END IF;
    IF send_event.event_type IS NULL
       OR send_event.event_type !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$' THEN
        RAISE EXCEPTION 'invalid event type "%": 1 to 128 of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`',
                send_event.event_type
            USING ERRCODE = 'check_violation', COLUMN = 'event_type';
    END IF;
    IF send_event.idempotency_key IS NOT NULL THEN
        -- Serialise senders of one key: the second waits, then finds the first's event.
        PERFORM pg_advisory_xact_lock(hashtextextended(
            'sluice.send_event/' || send_event.tenant || '/' || send_event.idempotency_key, 0));
        SELECT e.id INTO v_id FROM sluice.webhook_events e
        WHERE e.tenant = send_event.tenant AND e.idempotency_key = send_event.idempotency_key;
        IF FOUND THEN
            RETURN v_id;
        END IF;
    END IF;
    v_id := nextval('sluice.webhook_events_id_seq');
    v_body := sluice.webhook_body(v_id, send_event.event_type, send_event.payload);
    IF octet_length(v_body) > v_limit THEN
        RAISE EXCEPTION 'event is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                octet_length(v_body), v_limit
            USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload';
    END IF;
    IF send_event.traceparent IS NOT NULL AND NOT sluice.valid_traceparent(send_event.traceparent) THEN
        RAISE EXCEPTION 'invalid traceparent: % is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero)',
                quote_literal(left(send_event.traceparent, 64))
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'traceparent';
    END IF;
    INSERT INTO sluice.webhook_events (id, tenant, event_type, body, idempotency_key,
                                       traceparent, tracestate)
    VALUES (v_id, send_event.tenant, send_event.event_type, v_body, send_event.idempotency_key,
            send_event.traceparent,
            CASE WHEN send_event.traceparent IS NOT NULL
                      AND sluice.valid_tracestate(send_event.tracestate)
                 THEN send_event.tracestate END);
    PERFORM sluice.webhook_enqueue(send_event.tenant, v_id, ARRAY(
        SELECT e.id FROM sluice.webhook_endpoints e
        WHERE e.tenant = send_event.tenant AND e.enabled
          AND sluice.webhook_matches(e.events, send_event.event_type)
        ORDER BY e.id));
    RETURN v_id;
END
$function$;
COMMENT ON FUNCTION sluice.send_event(text, text, jsonb, text, text, text) IS 'Send a webhook event inside the caller''s transaction: one delivery job per matching, enabled endpoint of the tenant (the transactional outbox). Returns the event id. See docs/webhooks.md.';

CREATE OR REPLACE FUNCTION sluice.webhook_enqueue(p_tenant text, p_event bigint, p_endpoints bigint[])
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_ids bigint[];
BEGIN
    WITH inserted AS (
        INSERT INTO sluice.jobs (tenant, job_type, payload, priority, max_attempts,
                                 traceparent, tracestate)
        SELECT p_tenant, 'sluice.webhook',
               convert_to(json_build_object('endpoint', e.id, 'event', p_event)::text, 'UTF8'),
               0, 1 + coalesce(cardinality(e.retry_schedule_ms), 7),
               ev.traceparent, ev.tracestate
        FROM unnest(p_endpoints) WITH ORDINALITY AS u(endpoint, ord)
        JOIN sluice.webhook_endpoints e ON e.id = u.endpoint AND e.tenant = p_tenant
        LEFT JOIN sluice.webhook_events ev ON ev.id = p_event
        ORDER BY u.ord
        RETURNING id
    )
    SELECT array_agg(id ORDER BY id) INTO v_ids FROM inserted;
    IF cardinality(v_ids) > 0 THEN
        PERFORM pg_notify('sluice_jobs', '');
    END IF;
    RETURN coalesce(v_ids, '{}');
END
$function$;
