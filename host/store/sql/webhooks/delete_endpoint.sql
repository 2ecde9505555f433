-- Deletes one endpoint of a tenant; its pending deliveries end `cancelled` when a worker
-- picks them up. $1 tenant, $2 id.
DELETE FROM sluice.webhook_endpoints WHERE tenant = $1 AND id = $2 RETURNING id
