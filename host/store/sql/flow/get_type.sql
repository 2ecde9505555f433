-- A job type's flow controls and their state now: running jobs (counted only under a
-- cap), whole tokens of its bucket, pending jobs held in the keys' lane.
-- $1 tenant (text), $2 name (text).
SELECT jt.paused, jt.max_running, jt.max_running_per_key, jt.rate_count, jt.rate_period_ms,
       jt.key_rate_count, jt.key_rate_period_ms,
       CASE WHEN jt.max_running IS NOT NULL
            THEN (SELECT count(*) FROM sluice.jobs j
                  WHERE j.tenant = jt.tenant AND j.state = 'running' AND j.job_type = jt.name)
       END AS running,
       CASE WHEN jt.rate_count IS NOT NULL
            THEN sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at, jt.rate_count,
                                    jt.rate_period_ms)
       END AS tokens
FROM sluice.job_types jt
WHERE jt.tenant = $1 AND jt.name = $2
