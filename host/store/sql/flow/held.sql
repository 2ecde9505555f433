-- Why one pending job is not running: the flow controls or its tenant's daily quotas
-- (migration 0033) that hold it back now, or a snooze it is in (host/store/src/held.rs
-- words them). No row: not pending, or unknown.
-- $1 job id (int8), $2 tenant or NULL for any (text).
SELECT j.flow_key, t.paused AS tenant_paused, jt.paused AS type_paused,
       j.run_at > now() AS scheduled,
       -- Clamped to the readable range, as admin/get_job.sql does.
       least(greatest(j.run_at, timestamptz '1970-01-01 00:00:00+00'),
             timestamptz '9999-12-31 23:59:59.999999+00') AS run_at,
       -- Its last run suspended and it is pending in the future: only a snooze does that
       -- (a sleep or an await goes `waiting`; an answered one is due now).
       coalesce((SELECT h.outcome = 'suspended' FROM sluice.attempt_history h
                 WHERE h.job_id = j.id ORDER BY h.finished_at DESC LIMIT 1), false) AS snoozed,
       jt.max_running,
       CASE WHEN jt.max_running IS NOT NULL
            THEN (SELECT count(*)::int4 FROM sluice.jobs r
                  WHERE r.tenant = j.tenant AND r.state = 'running' AND r.job_type = j.job_type)
       END AS type_running,
       CASE WHEN j.flow_key <> '' THEN jt.max_running_per_key END AS max_running_per_key,
       k.running AS key_running,
       CASE WHEN jt.rate_count IS NOT NULL
            THEN now() + greatest(0, 1 - sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                          jt.rate_count, jt.rate_period_ms))
                         * jt.rate_period_ms / jt.rate_count * interval '1 millisecond'
       END AS type_tokens_at,
       CASE WHEN j.flow_key <> '' AND jt.key_rate_count IS NOT NULL
            THEN now() + greatest(0, 1 - sluice.flow_tokens(k.tokens, k.refilled_at,
                                                          jt.key_rate_count,
                                                          jt.key_rate_period_ms))
                         * jt.key_rate_period_ms / jt.key_rate_count * interval '1 millisecond'
       END AS key_tokens_at,
       now() AS now,
       t.max_attempts_per_day, t.max_fuel_per_day, t.max_egress_bytes_per_day,
       q.attempts AS day_attempts, q.fuel AS day_fuel, q.egress_bytes AS day_egress_bytes,
       (sluice.quota_today() + 1)::timestamp AT TIME ZONE 'UTC' AS quota_resets_at
FROM sluice.jobs j
JOIN sluice.tenants t ON t.id = j.tenant
LEFT JOIN LATERAL sluice.quota_used(j.tenant) q ON t.quota
LEFT JOIN sluice.job_types jt ON jt.tenant = j.tenant AND jt.name = j.job_type
LEFT JOIN sluice.flow_keys k
       ON k.tenant = j.tenant AND k.job_type = j.job_type AND k.key = j.flow_key
WHERE j.id = $1 AND j.state = 'pending' AND ($2::text IS NULL OR j.tenant = $2)
