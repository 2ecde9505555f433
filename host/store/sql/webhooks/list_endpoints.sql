-- A tenant's endpoints, oldest first. $1 tenant.
SELECT id, tenant, url, events, description, enabled, disabled_reason, key_id,
       retry_schedule_ms, timeout_ms,
       CASE WHEN previous_until > now() THEN previous_until END AS previous_until,
       created_at, updated_at
FROM sluice.webhook_endpoints WHERE tenant = $1 ORDER BY id
