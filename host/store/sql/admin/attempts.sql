-- The attempts of one job, oldest first, from the view sluice.job_attempts (history
-- table plus the attempt on the job row).
-- $1 job id (int8), $2 tenant or NULL for any (text).
SELECT a.id, a.job_id, a.attempt, a.worker, a.started_at, a.finished_at, a.outcome,
       a.error, a.fuel_used
FROM sluice.job_attempts a
JOIN sluice.jobs j ON j.id = a.job_id
WHERE a.job_id = $1 AND ($2::text IS NULL OR j.tenant = $2)
ORDER BY a.id
