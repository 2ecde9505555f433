-- Schedules of one tenant or all, by tenant and name.
-- $1 tenant or NULL for all (text).
SELECT id, tenant, name, cron, tz, job_type, payload, priority::int4 AS priority,
       max_attempts, jitter_ms, catch_up, max_catch_up, paused, next_slot, last_fired_slot,
       fired_count, skipped_count, last_error, created_at, updated_at
FROM sluice.schedules
WHERE ($1::text IS NULL OR tenant = $1)
ORDER BY tenant, name
