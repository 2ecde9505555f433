-- Creates a tenant; idempotent (an existing tenant is left as it is).
-- $1 tenant id (text; checked against tenants_id_slug by the caller first).
INSERT INTO sluice.tenants (id) VALUES ($1) ON CONFLICT (id) DO NOTHING
