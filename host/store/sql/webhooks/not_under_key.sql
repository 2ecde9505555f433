-- One batch of rotate-key over endpoints' signing secrets: up to $3 endpoints whose
-- secret is not sealed under the new key, after endpoint id $2 (0 to start), by id, so
-- that rows the host cannot open are passed, not read again.
-- $1 the new key id (text), $2 the last endpoint id seen (int8), $3 batch size (int4).
SELECT tenant, id, key_id, nonce, ciphertext
FROM sluice.webhook_endpoints
WHERE key_id <> $1 AND id > $2
ORDER BY id
LIMIT $3
