-- Sluice schema, part 22: a host leaves the webhook deliveries it cannot sign.
--
-- A delivery is signed with its endpoint's secret, sealed under the operator's key
-- (migration 0016). A host holding no key already left every delivery pending; a host
-- holding only other keys (the wrong key, or a rotation's new key before the old values
-- were re-sealed) claimed them, failed each attempt and dead-lettered them. The claim now
-- leaves a tenant's deliveries pending, for a host that holds the key, when one of the
-- tenant's endpoints has its signing secret -- or its previous one, while that still
-- signs -- sealed under a key id the host does not hold: the same per (tenant, type) skip
-- as types granted secrets, found by sluice.webhook_tenants_sealed_elsewhere(...).
--
-- That function walks the distinct key ids of the endpoints (a loose index scan over
-- the two new indexes: one probe per key id, two or three in all however many endpoints
-- there are) and reads endpoints only under a key id the host does not hold.
--
-- Upgrading a live database: two indexes on a small table, a new function, and CREATE
-- OR REPLACE of the eight-parameter claim with the same parameters and result, so hosts
-- of the previous version (and the seven- and six-parameter claims, which call it) keep
-- working and leave such deliveries too.

CREATE INDEX webhook_endpoints_key_id_idx ON sluice.webhook_endpoints (key_id);
CREATE INDEX webhook_endpoints_previous_key_id_idx ON sluice.webhook_endpoints (previous_key_id)
    WHERE previous_key_id IS NOT NULL;

-- The tenants with an endpoint whose signing secret, or previous secret while it still
-- signs (previous_until in the future), is sealed under a key id not in p_keys.
CREATE FUNCTION sluice.webhook_tenants_sealed_elsewhere(p_keys text[])
 RETURNS SETOF text
 LANGUAGE sql
 STABLE
AS $function$
    WITH RECURSIVE current_keys AS (
        (SELECT e.key_id FROM sluice.webhook_endpoints e ORDER BY e.key_id LIMIT 1)
        UNION ALL
        SELECT (SELECT e.key_id FROM sluice.webhook_endpoints e
                WHERE e.key_id > k.key_id ORDER BY e.key_id LIMIT 1)
        FROM current_keys k
        WHERE k.key_id IS NOT NULL
    ),
    previous_keys AS (
        (SELECT e.previous_key_id AS key_id FROM sluice.webhook_endpoints e
         WHERE e.previous_key_id IS NOT NULL ORDER BY e.previous_key_id LIMIT 1)
        UNION ALL
        SELECT (SELECT e.previous_key_id FROM sluice.webhook_endpoints e
                WHERE e.previous_key_id > k.key_id ORDER BY e.previous_key_id LIMIT 1)
        FROM previous_keys k
        WHERE k.key_id IS NOT NULL
    )
    -- The key ids not held, as an array: an index condition, so only the endpoints
    -- under them are read (none at all when the host holds every key id).
    SELECT e.tenant
    FROM sluice.webhook_endpoints e
    WHERE e.key_id = ANY (ARRAY(SELECT k.key_id FROM current_keys k
                                WHERE k.key_id <> ALL (COALESCE(p_keys, '{}'))))
    UNION
    SELECT e.tenant
    FROM sluice.webhook_endpoints e
    WHERE e.previous_key_id = ANY (ARRAY(SELECT k.key_id FROM previous_keys k
                                         WHERE k.key_id <> ALL (COALESCE(p_keys, '{}'))))
      AND e.previous_until > now()
$function$;

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
        WHERE COALESCE(cardinality(p_secret_keys), 0) > 0);
    -- Webhook deliveries are signed with sealed secrets: a host with no key leaves them
    -- all.
    v_keyless boolean := COALESCE(cardinality(p_secret_keys), 0) = 0;
BEGIN
    -- Driven from the capped tenants, one probe of the claim index each (a scalar
    -- subquery is never turned into a join): as an EXISTS, the planner could make it a
    -- semi-join that reads every due pending job to find the tenants that have one.
    PERFORM 1
    FROM sluice.tenants t
    WHERE t.max_running IS NOT NULL
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND (p_skip_tenants IS NULL OR t.id <> ALL (p_skip_tenants))
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
        SELECT l.tenant
        FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
              UNION
              SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
        -- A spare slot's claim leaves the tenants already running on that worker.
        WHERE p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants)
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
