-- A new endpoint of a tenant (no row when the tenant does not exist).
-- $1 id (int8, from next_endpoint_id.sql), $2 tenant, $3 url, $4 event patterns (text[]),
-- $5 description, $6 key id, $7 nonce, $8 ciphertext of the sealed signing secret,
-- $9 retry schedule in ms (int8[] or NULL for the default), $10 timeout ms (int4),
-- $11 the most endpoints a tenant may have (int8): no row when it has that many.
INSERT INTO sluice.webhook_endpoints
    (id, tenant, url, events, description, key_id, nonce, ciphertext, retry_schedule_ms, timeout_ms)
SELECT $1, t.id, $3, $4, $5, $6, $7, $8, $9, $10
FROM sluice.tenants t
WHERE t.id = $2
  AND (SELECT count(*) FROM sluice.webhook_endpoints e WHERE e.tenant = $2) < $11
RETURNING id, tenant, url, events, description, enabled, disabled_reason, key_id,
       retry_schedule_ms, timeout_ms,
       CASE WHEN previous_until > now() THEN previous_until END AS previous_until,
       created_at, updated_at
