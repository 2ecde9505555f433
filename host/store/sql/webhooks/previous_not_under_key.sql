-- One batch of rotate-key over endpoints' rotated-out (previous) signing secrets: up to
-- $3 endpoints that keep one not sealed under the new key, after endpoint id $2 (0 to
-- start), by id. Every kept previous secret is read, also one whose grace has ended: it
-- is still sealed under the operator's key.
-- $1 the new key id (text), $2 the last endpoint id seen (int8), $3 batch size (int4).
SELECT tenant, id, previous_key_id AS key_id, previous_nonce AS nonce,
       previous_ciphertext AS ciphertext
FROM sluice.webhook_endpoints
WHERE previous_key_id <> $1 AND id > $2
ORDER BY id
LIMIT $3
