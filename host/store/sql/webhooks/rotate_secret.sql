-- Replaces an endpoint's signing secret; the current one becomes the previous one and
-- keeps signing beside it until now() + $6.
-- $1 tenant, $2 id, $3 key id, $4 nonce, $5 ciphertext, $6 grace in microseconds (int8).
UPDATE sluice.webhook_endpoints
SET previous_key_id = key_id, previous_nonce = nonce, previous_ciphertext = ciphertext,
    previous_until = now() + $6 * interval '1 microsecond',
    key_id = $3, nonce = $4, ciphertext = $5, updated_at = now()
WHERE tenant = $1 AND id = $2
RETURNING id, tenant, url, events, description, enabled, disabled_reason, key_id,
       retry_schedule_ms, timeout_ms,
       CASE WHEN previous_until > now() THEN previous_until END AS previous_until,
       created_at, updated_at
