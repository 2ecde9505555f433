-- Sets a tenant's cap on running jobs (NULL lifts it). No row: unknown tenant.
-- $1 tenant (text), $2 cap or NULL (int4).
UPDATE sluice.tenants SET max_running = $2 WHERE id = $1
