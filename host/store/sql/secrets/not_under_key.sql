-- One batch of rotate-key: up to $3 secrets not yet under the new key, after the cursor
-- (tenant, name) so that rows the host cannot open are passed, not read again.
-- $1 the new key id (text), $2 cursor: [tenant, name] of the last row seen, or NULL to
-- start (text[]), $3 batch size (int4).
SELECT tenant, name, key_id, nonce, ciphertext
FROM sluice.secrets
WHERE key_id <> $1
  AND ($2::text[] IS NULL OR (tenant, name) > ($2[1], $2[2]))
ORDER BY tenant, name
LIMIT $3
