-- The sealed values of some of a tenant's secrets (those of these names that exist), for
-- the host to open: what a job type's grant resolves to, only ever inside its tenant.
-- $1 tenant (text), $2 names (text[]).
SELECT tenant, name, key_id, nonce, ciphertext
FROM sluice.secrets
WHERE tenant = $1 AND name = ANY ($2)
ORDER BY name
