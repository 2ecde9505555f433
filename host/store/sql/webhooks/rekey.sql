-- One batch of rotate-key over endpoints' signing secrets, in one guarded statement:
-- each endpoint takes its secret re-sealed under the new key, only if it still holds the
-- sealed secret that was read (same key id and nonce), so a `rotate-secret` in between
-- is never overwritten. updated_at is kept: the secret did not change. Returns the
-- endpoints re-sealed.
-- $1 tenants (text[]), $2 endpoint ids (int8[]), $3 old key ids (text[]), $4 old nonces
-- (bytea[]), $5 the new key id (text), $6 new nonces (bytea[]), $7 new ciphertexts
-- (bytea[]); the arrays are parallel.
UPDATE sluice.webhook_endpoints e
SET key_id = $5, nonce = r.new_nonce, ciphertext = r.new_ciphertext
FROM unnest($1::text[], $2::int8[], $3::text[], $4::bytea[], $6::bytea[], $7::bytea[])
     AS r(tenant, id, old_key_id, old_nonce, new_nonce, new_ciphertext)
WHERE e.id = r.id AND e.tenant = r.tenant
  AND e.key_id = r.old_key_id AND e.nonce = r.old_nonce
RETURNING e.id
