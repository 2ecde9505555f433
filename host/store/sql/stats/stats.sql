-- Queue statistics: one row per (tenant, job type) that is registered or has jobs, with
-- job counts per state (zero for a registered type with none), the oldest ready job's age
-- and the lease expirations of the last hour, whether the type (or its tenant) is paused
-- and how many of its due jobs each flow control or its tenant's used-up daily quota holds
-- back (migrations 0024, 0033; a key's jobs are counted through its sluice.flow_keys row).
-- Read-only.
-- $1 tenant or NULL for all (text).
WITH depth AS (
    SELECT tenant, job_type,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'pending' AND run_at <= now()) AS ready,
           count(*) FILTER (WHERE state = 'running') AS running,
           count(*) FILTER (WHERE state = 'waiting') AS waiting,
           count(*) FILTER (WHERE state = 'completed') AS completed,
           count(*) FILTER (WHERE state = 'dead') AS dead,
           count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
           -- run_at clamped to the readable range (src/time_range.rs).
           min(least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00'))
               FILTER (WHERE state = 'pending' AND run_at <= now()) AS oldest_ready
    FROM sluice.jobs
    WHERE ($1::text IS NULL OR tenant = $1)
    GROUP BY tenant, job_type
),
expired AS (
    SELECT j.tenant, j.job_type, count(*) AS expirations
    FROM sluice.attempt_history a
    JOIN sluice.jobs j ON j.id = a.job_id
    WHERE a.outcome = 'lease_expired' AND a.finished_at >= now() - interval '1 hour'
      AND ($1::text IS NULL OR j.tenant = $1)
    GROUP BY j.tenant, j.job_type
),
held AS (
    SELECT j.tenant, j.job_type,
           count(*) FILTER (WHERE j.flow_key <> '' AND jt.max_running_per_key IS NOT NULL
                              AND coalesce(k.running, 0) >= jt.max_running_per_key) AS key_cap,
           count(*) FILTER (WHERE k.ready_at > now()
                              AND NOT (j.flow_key <> '' AND jt.max_running_per_key IS NOT NULL
                                       AND coalesce(k.running, 0) >= jt.max_running_per_key))
               AS key_rate
    FROM sluice.jobs j
    JOIN sluice.job_types jt ON jt.tenant = j.tenant AND jt.name = j.job_type
    LEFT JOIN sluice.flow_keys k
           ON k.tenant = j.tenant AND k.job_type = j.job_type AND k.key = j.flow_key
    WHERE j.state = 'pending' AND j.flow_key IS NOT NULL AND j.run_at <= now()
      AND ($1::text IS NULL OR j.tenant = $1)
    GROUP BY j.tenant, j.job_type
),
registered AS (
    SELECT jt.tenant, jt.name AS job_type, jt.paused OR t.paused AS paused, jt.max_running,
           t.quota AND sluice.quota_room(t.id) = 0 AS over_quota,
           jt.rate_count IS NOT NULL
               AND sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at, jt.rate_count,
                                      jt.rate_period_ms) < 1 AS out_of_tokens
    FROM sluice.job_types jt
    JOIN sluice.tenants t ON t.id = jt.tenant
    WHERE ($1::text IS NULL OR jt.tenant = $1)
)
SELECT coalesce(d.tenant, r.tenant) AS tenant,
       coalesce(d.job_type, r.job_type) AS job_type,
       r.job_type IS NOT NULL AS registered,
       coalesce(d.pending, 0) AS pending, coalesce(d.ready, 0) AS ready,
       coalesce(d.running, 0) AS running, coalesce(d.waiting, 0) AS waiting,
       coalesce(d.completed, 0) AS completed,
       coalesce(d.dead, 0) AS dead, coalesce(d.cancelled, 0) AS cancelled,
       extract(epoch FROM now() - d.oldest_ready)::float8 AS oldest_ready_age_seconds,
       coalesce(e.expirations, 0) AS lease_expirations_last_hour,
       coalesce(r.paused, false) AS paused,
       CASE WHEN r.paused THEN coalesce(d.ready, 0) ELSE 0 END AS held_paused,
       CASE WHEN NOT r.paused AND r.over_quota THEN coalesce(d.ready, 0) ELSE 0 END
           AS held_quota,
       CASE WHEN NOT r.paused AND NOT r.over_quota AND coalesce(d.running, 0) >= r.max_running
            THEN coalesce(d.ready, 0) ELSE 0 END AS held_type_cap,
       CASE WHEN r.paused OR r.over_quota THEN 0 ELSE coalesce(h.key_cap, 0) END AS held_key_cap,
       CASE WHEN r.paused OR r.over_quota THEN 0 WHEN r.out_of_tokens THEN coalesce(d.ready, 0)
            ELSE coalesce(h.key_rate, 0) END AS held_rate,
       now() AS as_of
FROM depth d
FULL JOIN registered r ON r.tenant = d.tenant AND r.job_type = d.job_type
LEFT JOIN expired e ON e.tenant = d.tenant AND e.job_type = d.job_type
LEFT JOIN held h ON h.tenant = d.tenant AND h.job_type = d.job_type
ORDER BY 1, 2
