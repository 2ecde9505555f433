-- Pauses or resumes a tenant: the claim leaves a paused tenant's jobs pending (migration
-- 0024); running ones finish. No row: unknown tenant.
-- $1 tenant (text), $2 paused (bool).
UPDATE sluice.tenants SET paused = $2 WHERE id = $1
RETURNING id
