-- What a delivery sends, read at send time: the endpoint (NULL columns: deleted) and the
-- event (NULL: pruned). Only the secrets still signing: the current one and the previous
-- one until its grace ends.
-- $1 tenant, $2 endpoint id, $3 event id.
SELECT e.url, e.events, e.enabled, e.disabled_reason,
       e.key_id, e.nonce, e.ciphertext,
       CASE WHEN e.previous_until > now() THEN e.previous_key_id END AS previous_key_id,
       CASE WHEN e.previous_until > now() THEN e.previous_nonce END AS previous_nonce,
       CASE WHEN e.previous_until > now() THEN e.previous_ciphertext END AS previous_ciphertext,
       e.retry_schedule_ms, e.timeout_ms,
       ev.event_type, ev.body
FROM (SELECT 1) one
LEFT JOIN sluice.webhook_endpoints e ON e.tenant = $1 AND e.id = $2
LEFT JOIN sluice.webhook_events ev ON ev.tenant = $1 AND ev.id = $3
