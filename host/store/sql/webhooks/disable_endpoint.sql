-- Disables an endpoint with a reason (a delivery got 410 Gone). Idempotent.
-- $1 tenant, $2 id, $3 reason.
UPDATE sluice.webhook_endpoints
SET enabled = false, disabled_reason = $3, updated_at = now()
WHERE tenant = $1 AND id = $2 AND enabled
RETURNING id
