-- The attempts of one job with their stored logs, oldest first: every attempt from the
-- view sluice.job_attempts, with its row of sluice.attempt_logs when it logged anything
-- (log NULL otherwise). Scoped by tenant through the job row: another tenant's job gives
-- no rows, like a missing one.
-- $1 job id (int8), $2 tenant or NULL for any (text), $3 attempt number or NULL for
-- every attempt (int4).
SELECT a.id AS attempt_id, a.attempt, a.started_at, a.finished_at, a.outcome,
       l.log, coalesce(l.dropped_bytes, 0) AS dropped_bytes
FROM sluice.jobs j
JOIN sluice.job_attempts a ON a.job_id = j.id
LEFT JOIN sluice.attempt_logs l ON l.job_id = j.id AND l.attempt_id = a.id
WHERE j.id = $1 AND ($2::text IS NULL OR j.tenant = $2)
  AND ($3::int4 IS NULL OR a.attempt = $3)
ORDER BY a.id
