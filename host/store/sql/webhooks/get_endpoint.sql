-- One endpoint of a tenant. $1 tenant, $2 id (int8).
SELECT id, tenant, url, events, description, enabled, disabled_reason, key_id,
       retry_schedule_ms, timeout_ms,
       CASE WHEN previous_until > now() THEN previous_until END AS previous_until,
       created_at, updated_at
FROM sluice.webhook_endpoints WHERE tenant = $1 AND id = $2
