-- Switches the tenant a live admin session acts for. Guarded on the session being an
-- admin one and the tenant existing; reports which of the two held, and whether the row
-- changed.
-- $1 session id (int8), $2 tenant (text).
WITH moved AS (
    UPDATE sluice.ui_sessions s SET acting_tenant = t.id
    FROM sluice.tenants t
    WHERE s.id = $1 AND s.admin AND s.expires_at > now() AND t.id = $2
    RETURNING s.id
)
SELECT EXISTS (SELECT 1 FROM sluice.tenants WHERE id = $2) AS tenant_exists,
       (SELECT admin FROM sluice.ui_sessions WHERE id = $1 AND expires_at > now()) AS admin,
       EXISTS (SELECT 1 FROM moved) AS changed
