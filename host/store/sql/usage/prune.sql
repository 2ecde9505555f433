-- Retention of usage: deletes at most $2 rows of hours that ended more than $1 ago,
-- oldest first (a range on usage_hourly_hour_idx, migration 0035). SKIP LOCKED: a worker
-- adding to an old hour (it never does: it adds to the current one) is not waited for.
-- $1 age in microseconds (int8), $2 batch size (int8).
DELETE FROM sluice.usage_hourly u
WHERE (u.tenant, u.hour, u.job_type) IN (
    SELECT tenant, hour, job_type FROM sluice.usage_hourly
    WHERE hour < now() - $1 * interval '1 microsecond' - interval '1 hour'
    ORDER BY hour
    LIMIT $2
    FOR UPDATE SKIP LOCKED)
