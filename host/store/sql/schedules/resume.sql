-- Resumes a paused schedule from its next slot; guarded on `paused`, so resuming an
-- active schedule changes nothing (no row).
-- $1 tenant (text), $2 name (text), $3 next slot (timestamptz or NULL).
UPDATE sluice.schedules SET paused = false, next_slot = $3, updated_at = now()
WHERE tenant = $1 AND name = $2 AND paused
RETURNING id, tenant, name, cron, tz, job_type, payload, priority::int4 AS priority,
       max_attempts, jitter_ms, catch_up, max_catch_up, paused, next_slot, last_fired_slot,
       fired_count, skipped_count, last_error, created_at, updated_at
