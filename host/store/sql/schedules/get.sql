-- One schedule.
-- $1 tenant (text), $2 name (text).
SELECT id, tenant, name, cron, tz, job_type, payload, priority::int4 AS priority,
       max_attempts, jitter_ms, catch_up, max_catch_up, paused, next_slot, last_fired_slot,
       fired_count, skipped_count, last_error, created_at, updated_at
FROM sluice.schedules
WHERE tenant = $1 AND name = $2
