-- Sluice schema, part 36: a job's attempt history and stored logs are deleted with it by
-- the statement that deletes it, set-based, not by per-row cascades (issue 42).
--
-- * The foreign keys from sluice.attempt_history and sluice.attempt_logs to sluice.jobs
--   (ON DELETE CASCADE) are dropped: each fired an RI trigger, a DELETE of its own, per
--   deleted job, even one with no history: a retention pass cost 10.5 µs of the
--   database's CPU per job with them, 6.5 without (docs/benchmarks.md, "PostgreSQL's CPU
--   over a job's life"). The two statements that delete jobs, retention
--   (sql/retention/prune_batch.sql) and the dashboard's bulk delete
--   (sql/job_search/bulk_delete.sql), delete both tables' rows of the jobs they delete
--   in the same statement, as they already do for the journal and signals (migration
--   0023).
-- * Rows are only written for a job by the statements that end one of its attempts
--   (completion, failure, release, cancel, suspension, the reaper), each in the same
--   statement as the update of the job's running row: they never name a job that is
--   not there (a running job is never deleted). Nothing else deletes a job.
--
-- Upgrading a live database: two constraints dropped, nothing rewritten. A host of an
-- earlier version still deletes jobs with its own statements, which relied on the
-- cascade: run `sluice migrate` with the new host, and retire the older hosts' retention
-- (`--no-retention`) until they are replaced, or their prunes leave history rows behind.

ALTER TABLE sluice.attempt_history DROP CONSTRAINT job_attempts_job_id_fkey;
ALTER TABLE sluice.attempt_logs DROP CONSTRAINT attempt_logs_job_id_fkey;
