-- One batch of rotate-key in one guarded statement: each row takes its value re-sealed
-- under the new key, only if it still holds the sealed value that was read (same key id
-- and nonce), so a `secrets set` in between is never overwritten. updated_at is kept:
-- the value did not change. Returns the rows re-sealed.
-- $1 tenants, $2 names (text[]), $3 old key ids (text[]), $4 old nonces (bytea[]),
-- $5 the new key id (text), $6 new nonces (bytea[]), $7 new ciphertexts (bytea[]); the
-- arrays are parallel.
UPDATE sluice.secrets s
SET key_id = $5, nonce = r.new_nonce, ciphertext = r.new_ciphertext
FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $6::bytea[], $7::bytea[])
     AS r(tenant, name, old_key_id, old_nonce, new_nonce, new_ciphertext)
WHERE s.tenant = r.tenant AND s.name = r.name
  AND s.key_id = r.old_key_id AND s.nonce = r.old_nonce
RETURNING s.tenant, s.name
