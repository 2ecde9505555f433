-- Deletes one secret of a tenant; no row: there was none.
-- $1 tenant (text), $2 name (text).
DELETE FROM sluice.secrets WHERE tenant = $1 AND name = $2
RETURNING name
