-- Saves an uploaded component (size is generated from the bytes).
-- $1 tenant (text), $2 name (text), $3 version (text), $4 sha256 hex (text), $5 bytes (bytea).
INSERT INTO sluice.components (tenant, name, version, sha256, bytes)
VALUES ($1, $2, $3, $4, $5)
RETURNING id, tenant, name, version, sha256, size, created_at
