-- Saves an uploaded component (size is generated from the bytes).
-- $1 tenant (text), $2 name (text), $3 version (text), $4 sha256 hex (text), $5 bytes (bytea),
-- $6 contract (int2: N of sluice:task@0.N.0, found by the sandbox).
INSERT INTO sluice.components (tenant, name, version, sha256, bytes, contract)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, tenant, name, version, sha256, size, contract, created_at
