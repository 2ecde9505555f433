-- Sends a signal to a job through sluice.signal(...) (migration 0027), scoped to a
-- tenant when given: another tenant's job, like a missing one, gives no row. The function
-- locks the job, refuses a finished one (SQLSTATE 55000, the state in DETAIL), stores the
-- signal and wakes the job when it waits for that name. Returns whether it woke it.
-- $1 job id (int8), $2 tenant or NULL for any (text), $3 signal name (text), $4 payload
-- (jsonb, NULL: sent without one).
SELECT sluice.signal(j.id, $3::text, $4::jsonb) AS woke
FROM sluice.jobs j
WHERE j.id = $1 AND ($2::text IS NULL OR j.tenant = $2)
