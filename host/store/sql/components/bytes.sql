-- A component's bytes.
-- $1 component id (int8).
SELECT bytes FROM sluice.components WHERE id = $1
