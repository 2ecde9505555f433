-- Pending jobs, of one tenant or of all.
-- $1 tenant or NULL for all (text).
-- One count per lane, each over its own partial index (see next_due.sql).
SELECT (SELECT count(*) FROM sluice.jobs
        WHERE state = 'pending' AND flow_key IS NULL AND ($1::text IS NULL OR tenant = $1))
     + (SELECT count(*) FROM sluice.jobs
        WHERE state = 'pending' AND flow_key IS NOT NULL AND ($1::text IS NULL OR tenant = $1))
