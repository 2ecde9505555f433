-- Sluice schema, part 17: stored attempt logs (issue 20).
--
-- * sluice.attempt_logs: what one attempt logged (host `log` lines, the guest's stdout
--   and stderr, as the sandbox captured and masked them, cut at the attempt's log cap)
--   and how many bytes the cap dropped. One row per attempt that produced output, written
--   by the fenced statement that ends the attempt (finish/complete_many.sql,
--   finish/fail_many.sql, finish/mark_cancelled.sql); a quiet attempt writes nothing here.
-- * The jobs row is not widened: the log lives beside it, keyed by (job_id, attempt_id),
--   so the one index serves readers (a job's logs), the cascade and the insert.
-- * Retention follows the job's: the row goes with its job (ON DELETE CASCADE), like the
--   attempt history. The tenant is the job's (readers join sluice.jobs to scope by it).
--
-- Upgrading a live database: a new table; running workers of earlier binaries finish
-- attempts without writing logs.

CREATE TABLE sluice.attempt_logs (
    job_id        bigint  NOT NULL REFERENCES sluice.jobs (id) ON DELETE CASCADE,
    attempt_id    bigint  NOT NULL,
    attempt       integer NOT NULL CHECK (attempt >= 1),
    log           bytea   NOT NULL,
    dropped_bytes bigint  NOT NULL DEFAULT 0 CHECK (dropped_bytes >= 0),
    PRIMARY KEY (job_id, attempt_id)
);

COMMENT ON TABLE sluice.attempt_logs IS
    'The captured log of each attempt that produced output, masked and capped; deleted with its job.';
