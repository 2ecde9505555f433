-- Sends a signal to a job through sluice.signal(...) (migrations 0027 and 0030), scoped to
-- a tenant when given: another tenant's job, like a missing one, gives no row. A payload
-- whose JSON text is over the tenant's max_payload_bytes, else this host's default ($5),
-- is not sent (woke NULL, with its size and the limit); the function checks the
-- database's own default again. It locks the job, refuses a finished one (SQLSTATE
-- 55000, the state in DETAIL), stores the signal and wakes the job when it waits for
-- that name. Returns whether it woke it.
-- $1 job id (int8), $2 tenant or NULL for any (text), $3 signal name (text), $4 payload
-- (jsonb, NULL: sent without one), $5 the host's default payload limit (int8).
WITH target AS (
    SELECT j.id, octet_length($4::jsonb::text)::int8 AS size,
           coalesce(t.max_payload_bytes::int8, $5::int8) AS payload_limit
    FROM sluice.jobs j
    LEFT JOIN sluice.tenants t ON t.id = j.tenant
    WHERE j.id = $1 AND ($2::text IS NULL OR j.tenant = $2)
)
SELECT CASE WHEN coalesce(size, 0) <= payload_limit
            THEN sluice.signal(id, $3::text, $4::jsonb) END AS woke,
       coalesce(size, 0) AS size, payload_limit
FROM target
