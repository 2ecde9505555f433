-- Deletes a schedule and (by cascade) its slot records; its jobs stay.
-- $1 tenant (text), $2 name (text).
DELETE FROM sluice.schedules WHERE tenant = $1 AND name = $2
