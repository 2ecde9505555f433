-- Deletes at most $2 schedule slot records that fired more than $1 microseconds ago
-- (the caller repeats until a batch comes back short).
-- $1 age in microseconds (int8), $2 batch size (int8).
DELETE FROM sluice.schedule_slots
WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM sluice.schedule_slots
    WHERE fired_at < now() - $1 * interval '1 microsecond'
    LIMIT $2))
