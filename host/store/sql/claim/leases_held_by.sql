-- The leases the database says a worker holds (the worker's orphan check).
-- $1 worker (text, as recorded in locked_by).
SELECT id, lease_token FROM sluice.jobs WHERE state = 'running' AND locked_by = $1
