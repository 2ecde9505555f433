-- Seconds until the earliest pending job is due (negative when one is overdue, NULL when
-- none is pending), database time.
-- $1 tenants or NULL for all (text[]).
-- run_at clamped to the readable range (src/time_range.rs), as every reader does, in each
-- lane (greatest() skips NULLs, so a clamp of an empty lane's min would not stay NULL).
-- One scan per lane, each over its own partial index (jobs_claim_tenant_idx for the main
-- lane, jobs_flow_idx for the flow lane; migration 0038 dropped the index of every
-- pending row): `state = 'pending'` alone matches neither.
SELECT extract(epoch FROM min(due) - now())::float8
FROM (
    SELECT min(least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00')) AS due
    FROM sluice.jobs
    WHERE state = 'pending' AND flow_key IS NULL AND ($1::text[] IS NULL OR tenant = ANY($1))
    UNION ALL
    SELECT min(least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00'))
    FROM sluice.jobs
    WHERE state = 'pending' AND flow_key IS NOT NULL AND ($1::text[] IS NULL OR tenant = ANY($1))
) lanes
