-- Changes the given fields of one endpoint of a tenant (NULL: unchanged).
-- $1 tenant, $2 id, $3 url, $4 event patterns (text[]), $5 description, $6 enabled (bool;
-- enabling clears the disabled reason, disabling by hand sets $7), $7 disabled reason,
-- $8 set the retry schedule (bool), $9 retry schedule ms (int8[] or NULL = default),
-- $10 timeout ms (int4).
UPDATE sluice.webhook_endpoints
SET url = coalesce($3, url),
    events = coalesce($4, events),
    description = coalesce($5, description),
    enabled = coalesce($6, enabled),
    disabled_reason = CASE WHEN $6 IS NULL THEN disabled_reason
                           WHEN $6 THEN NULL
                           ELSE $7 END,
    retry_schedule_ms = CASE WHEN $8 THEN $9 ELSE retry_schedule_ms END,
    timeout_ms = coalesce($10, timeout_ms),
    updated_at = now()
WHERE tenant = $1 AND id = $2
RETURNING id, tenant, url, events, description, enabled, disabled_reason, key_id,
       retry_schedule_ms, timeout_ms,
       CASE WHEN previous_until > now() THEN previous_until END AS previous_until,
       created_at, updated_at
