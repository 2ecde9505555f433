-- Sluice schema, part 6: cron schedules and fleet maintenance bookkeeping.
-- See docs/schedules.md and docs/retention.md.

-- A schedule enqueues one job of `job_type` per slot of its cron expression, evaluated in
-- its time zone. Any number of hosts run the scheduler: the host that fires a schedule
-- holds its row lock (FOR UPDATE SKIP LOCKED) and, in the same transaction, inserts the
-- jobs, one `schedule_slots` row per fired slot, and moves `next_slot` past every slot it
-- handled. The next host to lock the row sees the new `next_slot`.
CREATE TABLE sluice.schedules (
    id              bigserial   PRIMARY KEY,
    tenant          text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    name            text        NOT NULL CONSTRAINT schedules_name_length CHECK (char_length(name) BETWEEN 1 AND 128),
    -- Cron expression as given (5 fields, or 6 with seconds first); validated by croner
    -- at creation.
    cron            text        NOT NULL CONSTRAINT schedules_cron_length CHECK (char_length(cron) BETWEEN 1 AND 256),
    -- IANA time zone name the expression is evaluated in (validated by chrono-tz).
    tz              text        NOT NULL DEFAULT 'UTC',
    job_type        text        NOT NULL CONSTRAINT schedules_job_type_length CHECK (char_length(job_type) BETWEEN 1 AND 128),
    payload         bytea       NOT NULL,
    priority        smallint    NOT NULL DEFAULT 10,
    -- NULL: the job type's max_attempts.
    max_attempts    integer     CONSTRAINT schedules_max_attempts_positive CHECK (max_attempts >= 1),
    -- A job's run_at is its slot plus a deterministic offset in [0, jitter_ms].
    jitter_ms       bigint      NOT NULL DEFAULT 0 CONSTRAINT schedules_jitter_non_negative CHECK (jitter_ms >= 0),
    catch_up        text        NOT NULL DEFAULT 'latest'
                    CONSTRAINT schedules_catch_up_known CHECK (catch_up IN ('none', 'latest', 'all')),
    max_catch_up    integer     NOT NULL DEFAULT 10 CONSTRAINT schedules_max_catch_up_positive CHECK (max_catch_up >= 1),
    paused          boolean     NOT NULL DEFAULT false,
    -- The earliest slot not yet handled (fired or skipped). NULL: the expression has no
    -- future slot; the schedule never fires again.
    next_slot       timestamptz,
    last_fired_slot timestamptz,
    -- Slots that enqueued a job, and slots that came due but did not run (missed during
    -- downtime beyond the catch-up policy, or their job type was gone).
    fired_count     bigint      NOT NULL DEFAULT 0,
    skipped_count   bigint      NOT NULL DEFAULT 0,
    -- Why the last slot could not enqueue, if it could not (cleared by the next success).
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedules_tenant_name_key UNIQUE (tenant, name)
);

-- The scheduler's two questions: which schedules are due, and when is the next one.
CREATE INDEX schedules_due_idx ON sluice.schedules (next_slot) WHERE NOT paused;

-- One row per fired slot: the unique record that makes a second insert of the same slot
-- fail (and roll back its job) even if the row lock above were ever bypassed. Pruned by
-- retention with completed jobs.
CREATE TABLE sluice.schedule_slots (
    schedule_id bigint      NOT NULL REFERENCES sluice.schedules (id) ON DELETE CASCADE,
    slot        timestamptz NOT NULL,
    job_id      bigint      NOT NULL,
    fired_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule_id, slot)
);

CREATE INDEX schedule_slots_fired_at_idx ON sluice.schedule_slots (fired_at);

-- Fleet maintenance tasks that run once per interval across all hosts (retention). A
-- host takes a run with one guarded upsert on `last_started_at`; a session advisory lock
-- keeps two runs from overlapping when one outlasts the interval.
CREATE TABLE sluice.maintenance_runs (
    task             text        PRIMARY KEY,
    last_started_at  timestamptz NOT NULL,
    last_finished_at timestamptz,
    last_deleted     bigint,
    started_by       text
);
