-- Creates a schedule; a taken (tenant, name) returns no row (ON CONFLICT DO NOTHING).
-- $1 tenant, $2 name, $3 cron, $4 time zone, $5 job type (text), $6 payload (bytea),
-- $7 priority (int2), $8 max_attempts or NULL (int4), $9 jitter_ms (int8),
-- $10 catch_up ('none' | 'latest' | 'all'), $11 max_catch_up (int4),
-- $12 first slot (timestamptz).
INSERT INTO sluice.schedules (tenant, name, cron, tz, job_type, payload, priority,
                              max_attempts, jitter_ms, catch_up, max_catch_up, next_slot)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (tenant, name) DO NOTHING
RETURNING id, tenant, name, cron, tz, job_type, payload, priority::int4 AS priority,
       max_attempts, jitter_ms, catch_up, max_catch_up, paused, next_slot, last_fired_slot,
       fired_count, skipped_count, last_error, created_at, updated_at
