-- Sluice schema, part 7: fair claims across tenants, and a per-tenant cap on running
-- jobs fleet-wide. The algorithm and its measured effect: docs/fairness.md.

-- NULL: no cap. The cap counts this tenant's `running` rows across every worker.
ALTER TABLE sluice.tenants
    ADD COLUMN max_running integer
        CONSTRAINT tenants_max_running_positive CHECK (max_running IS NULL OR max_running >= 1);

-- The claim, in one round-trip from the worker. A function rather than one statement
-- because a cap needs two snapshots: capped tenants' rows are locked first (claimers of
-- those tenants queue there, in id order, so they never deadlock), and the claim
-- statement that follows takes a fresh snapshot (PL/pgSQL, READ COMMITTED) in which the
-- running jobs the previous lock holder just claimed are visible and counted. Tenants
-- without a cap take no lock at all.
--
-- Order: every tenant with ready work gets its jobs ranked by (priority DESC, run_at,
-- id); a job's fairness key is (jobs that tenant already runs fleet-wide) + (its rank).
-- The claim takes the lowest keys first: least-served tenants first, and within one
-- tenant strict priority order. A tenant with 7 jobs running and one with none that
-- both have work split 8 free slots 1 + 7 until their running counts meet.
CREATE FUNCTION sluice.claim(
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
    running AS (
        SELECT j.tenant, count(*)::integer AS n
        FROM sluice.jobs j
        WHERE j.state = 'running'
        GROUP BY j.tenant
    ),
    budget AS (
        SELECT tl.tenant,
               COALESCE(r.n, 0) AS running,
               GREATEST(0, LEAST(p_limit, COALESCE(t.max_running - COALESCE(r.n, 0), p_limit))) AS take
        FROM tenant_list tl
        LEFT JOIN running r ON r.tenant = tl.tenant
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
        FROM picked
        WHERE j.id = picked.id AND j.state = 'pending'
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
