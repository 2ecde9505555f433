-- Pending jobs, of one tenant or of all.
-- $1 tenant or NULL for all (text).
SELECT count(*) FROM sluice.jobs
WHERE state = 'pending' AND ($1::text IS NULL OR tenant = $1)
