-- Seconds until the earliest pending job is due (negative when one is overdue, NULL when
-- none is pending), database time.
-- $1 tenants or NULL for all (text[]).
-- run_at clamped to the readable range (src/time_range.rs), as every reader does.
SELECT extract(epoch FROM min(least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00')) - now())::float8
FROM sluice.jobs
WHERE state = 'pending' AND ($1::text[] IS NULL OR tenant = ANY($1))
