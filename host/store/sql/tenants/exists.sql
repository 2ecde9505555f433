-- Whether a tenant exists.
-- $1 tenant id (text).
SELECT EXISTS (SELECT 1 FROM sluice.tenants WHERE id = $1)
