-- Stops a schedule whose stored expression no longer parses, saying why.
-- $1 schedule id (int8), $2 the reason (text).
UPDATE sluice.schedules SET next_slot = NULL, last_error = $2, updated_at = now() WHERE id = $1
