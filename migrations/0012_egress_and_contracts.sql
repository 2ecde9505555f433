-- Sluice schema, part 12: outbound HTTP grants and the contract of each component
-- (issue 17: tasks reach the outside world; rolling deploys across contracts).
--
-- * components.contract: N of `sluice:task@0.N.0`, the contract the component targets,
--   found by the sandbox at upload. Components stored before this part were all 0.1
--   (earlier hosts refused anything else at upload), hence the default.
-- * job_types.http_allow: the destinations the type's attempts may call
--   (`scheme://host[:port]`, `*.suffix`; parsed and normalised by the host before it is
--   stored, docs/egress.md), empty = none; and its HTTP limits and timeouts (NULL: host
--   default).
-- * tenants.egress_allow: the operator's bound on what the tenant's types may be granted
--   (NULL: no bound beyond the host's deny list); max_http_*: caps like the other
--   tenant caps.
-- * sluice.claim(..., p_max_contract): a host claims only jobs whose type's component
--   targets a contract it runs. The five-argument claim that earlier binaries call
--   becomes a wrapper with p_max_contract = 1, because those binaries run 0.1 only.
--
-- Upgrading a live database: ADD COLUMN with constant defaults (no rewrite), one small
-- index and CREATE OR REPLACE FUNCTION. Running workers keep working.

ALTER TABLE sluice.components
    ADD COLUMN contract smallint NOT NULL DEFAULT 1,
    ADD CONSTRAINT components_contract_range CHECK (contract BETWEEN 1 AND 99);
CREATE INDEX components_contract_idx ON sluice.components (contract);

ALTER TABLE sluice.job_types
    ADD COLUMN http_allow text[] NOT NULL DEFAULT '{}',
    ADD COLUMN http_max_requests integer,
    ADD COLUMN http_request_bytes bigint,
    ADD COLUMN http_response_bytes bigint,
    ADD COLUMN http_connect_timeout_ms bigint,
    ADD COLUMN http_first_byte_timeout_ms bigint,
    ADD COLUMN http_between_bytes_timeout_ms bigint,
    ADD CONSTRAINT job_types_http_allow_size
        CHECK (cardinality(http_allow) <= 64 AND array_position(http_allow, NULL) IS NULL),
    ADD CONSTRAINT job_types_http_max_requests_check CHECK (http_max_requests >= 0),
    ADD CONSTRAINT job_types_http_request_bytes_check CHECK (http_request_bytes > 0),
    ADD CONSTRAINT job_types_http_response_bytes_check CHECK (http_response_bytes > 0),
    ADD CONSTRAINT job_types_http_timeouts_check CHECK (http_connect_timeout_ms > 0
        AND http_first_byte_timeout_ms > 0 AND http_between_bytes_timeout_ms > 0);

ALTER TABLE sluice.tenants
    ADD COLUMN egress_allow text[],
    ADD COLUMN max_http_requests integer,
    ADD COLUMN max_http_request_bytes bigint,
    ADD COLUMN max_http_response_bytes bigint,
    ADD CONSTRAINT tenants_egress_allow_size
        CHECK (cardinality(egress_allow) <= 64 AND array_position(egress_allow, NULL) IS NULL),
    ADD CONSTRAINT tenants_max_http_requests_check CHECK (max_http_requests >= 0),
    ADD CONSTRAINT tenants_max_http_request_bytes_check CHECK (max_http_request_bytes > 0),
    ADD CONSTRAINT tenants_max_http_response_bytes_check CHECK (max_http_response_bytes > 0);

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint)
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    -- The job types (tenant/name; a tenant id holds no `/`) whose component targets a
    -- newer contract than this host runs: left pending for a newer host. Found by the
    -- components_contract_idx probe, empty (and free) when every host is current.
    v_newer text[] := ARRAY(
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.components co
        JOIN sluice.job_types jt ON jt.component_id = co.id
        WHERE co.contract > p_max_contract);
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
              AND (cardinality(v_newer) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_newer))
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

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint,
                                        p_tenants text[], p_job_types text[])
RETURNS TABLE (id bigint, tenant text, job_type text, payload bytea, priority integer,
               attempt integer, max_attempts integer, lease_token uuid,
               locked_until timestamptz)
LANGUAGE sql
AS $$
    SELECT * FROM sluice.claim(p_worker, p_limit, p_lease_us, p_tenants, p_job_types, 1::smallint)
$$;
