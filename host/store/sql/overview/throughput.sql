-- One tenant's throughput per minute over the last $2 minutes (the current, partial
-- minute last), zero-filled, by the database's clock; minutes are UTC minutes.
-- completed: jobs that reached `completed` in the minute (jobs.finished_at, a range on
-- jobs_finished_idx with the literal state). failed: attempts of the tenant's jobs that
-- ended in a failure in the minute (outcome retry, dead or lease_expired; released and
-- cancelled attempts are not failures), from attempt_history_failed_idx (migration 0019).
-- $1 tenant (text), $2 minutes (int4, 1..=180).
WITH bounds AS (
    SELECT date_trunc('minute', now(), 'UTC') AS last,
           date_trunc('minute', now(), 'UTC') - ($2::int4 - 1) * interval '1 minute' AS first
),
completed AS (
    SELECT date_trunc('minute', j.finished_at, 'UTC') AS minute, count(*) AS n
    FROM sluice.jobs j, bounds b
    WHERE j.state = 'completed' AND j.finished_at >= b.first AND j.tenant = $1
    GROUP BY 1
),
failed AS (
    SELECT date_trunc('minute', a.finished_at, 'UTC') AS minute, count(*) AS n
    FROM sluice.attempt_history a
    JOIN sluice.jobs j ON j.id = a.job_id
    CROSS JOIN bounds b
    WHERE a.outcome IN ('retry', 'dead', 'lease_expired') AND a.finished_at >= b.first
      AND j.tenant = $1
    GROUP BY 1
)
SELECT m.minute, coalesce(c.n, 0) AS completed, coalesce(f.n, 0) AS failed
FROM bounds b
CROSS JOIN LATERAL generate_series(b.first, b.last, interval '1 minute') AS m(minute)
LEFT JOIN completed c ON c.minute = m.minute
LEFT JOIN failed f ON f.minute = m.minute
ORDER BY m.minute
