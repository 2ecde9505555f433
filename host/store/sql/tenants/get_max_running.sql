-- A tenant's cap on running jobs (no row: unknown tenant).
-- $1 tenant (text).
SELECT max_running FROM sluice.tenants WHERE id = $1
