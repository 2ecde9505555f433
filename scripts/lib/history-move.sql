-- A prototype of issue #42's lever 1, for scripts/claim-cycle's `history` variant only
-- (never a migration): finished jobs leave sluice.jobs in the completion statement, into
-- sluice.jobs_done, partitioned by finish time, so that retention drops a partition.
-- Applied to a copy of a migrated database; what it leaves out of a real design is said
-- in docs/benchmarks.md (idempotency keys' own table, dead and cancelled jobs, readers).
--
-- Two partitions: `kept` holds the finished jobs already in the database (the retained
-- history claim-cycle puts there, dated a day ahead so that a prune of everything finished
-- before now leaves them), `run` those the run finishes; retention of the run's jobs is
-- `DROP TABLE sluice.jobs_done_run`.

CREATE TABLE sluice.jobs_done (LIKE sluice.jobs INCLUDING DEFAULTS) PARTITION BY RANGE (finished_at);
DO $$
DECLARE cut timestamptz := now() + interval '12 hours';
BEGIN
    EXECUTE format('CREATE TABLE sluice.jobs_done_run PARTITION OF sluice.jobs_done FOR VALUES FROM (MINVALUE) TO (%L)', cut);
    EXECUTE format('CREATE TABLE sluice.jobs_done_kept PARTITION OF sluice.jobs_done FOR VALUES FROM (%L) TO (MAXVALUE)', cut);
END $$;
-- The readers a history needs: a job by id (show, a parent's children), a tenant's
-- finished jobs by time (lists), a parent's children by position.
CREATE INDEX jobs_done_id_idx ON sluice.jobs_done (id);
CREATE INDEX jobs_done_tenant_idx ON sluice.jobs_done (tenant, finished_at);
CREATE INDEX jobs_done_parent_idx ON sluice.jobs_done (parent_id, parent_seq) WHERE parent_id IS NOT NULL;

INSERT INTO sluice.jobs_done SELECT * FROM sluice.jobs WHERE finished_at IS NOT NULL;
DELETE FROM sluice.jobs WHERE finished_at IS NOT NULL;

-- The two "became finished" triggers fire on the history's insert instead.
DROP TRIGGER jobs_wake_parent ON sluice.jobs;
DROP TRIGGER jobs_notify_finished ON sluice.jobs;
CREATE TRIGGER jobs_done_wake_parent AFTER INSERT ON sluice.jobs_done FOR EACH ROW
    WHEN (NEW.parent_id IS NOT NULL) EXECUTE FUNCTION sluice.wake_parent();
CREATE TRIGGER jobs_done_notify_finished AFTER INSERT ON sluice.jobs_done FOR EACH ROW
    WHEN (NEW.watched) EXECUTE FUNCTION sluice.notify_finished();

-- sluice.complete_batch as a move: the same guard (id, running, lease token), a DELETE
-- instead of the UPDATE, and the completed row inserted into the history with the columns
-- the UPDATE would have set. The column list is built from the table's, in its order.
DO $do$
DECLARE cols text;
BEGIN
    SELECT string_agg(CASE attname
        WHEN 'state' THEN '''completed''::sluice.job_state'
        WHEN 'output' THEN '(p_outputs)[width_bucket(d.id, p_ids)]'
        WHEN 'finished_at' THEN 'now()'
        WHEN 'updated_at' THEN 'now()'
        WHEN 'attempt_fuel' THEN '(p_fuel)[width_bucket(d.id, p_ids)]'
        WHEN 'locked_by' THEN 'NULL' WHEN 'locked_until' THEN 'NULL' WHEN 'lease_token' THEN 'NULL'
        WHEN 'cancel_requested' THEN 'false'
        ELSE 'd.' || quote_ident(attname) END, ', ' ORDER BY attnum)
    INTO cols
    FROM pg_attribute WHERE attrelid = 'sluice.jobs'::regclass AND attnum > 0 AND NOT attisdropped;
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION sluice.complete_batch(p_ids bigint[], p_tokens uuid[], p_outputs bytea[],
        p_fuel bigint[], p_logs bytea[], p_dropped bigint[])
 RETURNS TABLE(id bigint) LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan' SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off' SET jit TO 'off'
AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH done AS (
        DELETE FROM sluice.jobs j
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running'
          AND j.lease_token = (p_tokens)[width_bucket(j.id, p_ids)]
        RETURNING j.*
    ),
    moved AS (
        INSERT INTO sluice.jobs_done SELECT %s FROM done d
    ),
    logged AS (
        INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
        SELECT d.id, d.attempt_id, d.attempt, (p_logs)[width_bucket(d.id, p_ids)],
               coalesce((p_dropped)[width_bucket(d.id, p_ids)], 0)
        FROM done d
        WHERE p_logs IS NOT NULL AND (p_logs)[width_bucket(d.id, p_ids)] IS NOT NULL
    )
    SELECT d.id FROM done d;
END
$body$$f$, cols);
END $do$;

VACUUM FULL sluice.jobs;
ANALYZE;
