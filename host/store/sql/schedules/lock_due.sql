-- Locks due schedules of every tenant, oldest slot first; rows another host holds are
-- skipped (FOR UPDATE SKIP LOCKED), never waited for.
-- $1 clock override or NULL for now() (timestamptz; a simulated clock for tests and
-- tools), $2 batch size (int8).
SELECT id, cron, tz, jitter_ms, catch_up, max_catch_up, next_slot,
       coalesce($1::timestamptz, now()) AS now
FROM sluice.schedules
WHERE NOT paused AND next_slot <= coalesce($1::timestamptz, now())
ORDER BY next_slot, id
LIMIT $2
FOR UPDATE SKIP LOCKED
