-- Sluice schema, part 3: one row per attempt (claim), finished by the statement that
-- ends the attempt (complete, fail, release, mark_cancelled, reap).
CREATE TABLE sluice.job_attempts (
    id          bigserial   PRIMARY KEY,
    -- Cascades when retention deletes the job. The FK check on insert locks the job row
    -- that the same claim statement has just updated, so it adds no contention.
    job_id      bigint      NOT NULL REFERENCES sluice.jobs (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL CHECK (attempt >= 1),
    -- The lease this attempt ran under: how the finishing statement finds its row
    -- (attempt numbers repeat after a release or an operator retry).
    lease_token uuid        NOT NULL,
    worker      text        NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    outcome     text        CONSTRAINT job_attempts_outcome_known CHECK (
                    outcome IN ('completed', 'retry', 'dead', 'released', 'lease_expired', 'cancelled')),
    error       text,
    fuel_used   bigint      CHECK (fuel_used >= 0),
    CONSTRAINT job_attempts_outcome_iff_finished CHECK ((outcome IS NULL) = (finished_at IS NULL))
) WITH (
    fillfactor = 90,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);

CREATE INDEX job_attempts_job_id_idx ON sluice.job_attempts (job_id, id);
