-- Every running job of the fleet (all tenants) with the worker holding it, by worker
-- then id; from jobs_running_idx (running rows only). Read-only.
-- $1 limit (int8).
SELECT locked_by AS worker, tenant, id AS job_id, job_type, attempt,
       attempt_started_at AS started_at
FROM sluice.jobs
WHERE state = 'running'
ORDER BY locked_by, id
LIMIT $1
