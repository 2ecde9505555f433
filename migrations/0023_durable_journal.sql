-- Sluice schema, part 23: durable job types and the journal of host calls (issue 43).
--
-- * sluice.job_types.durable: the operator's opt-in (`sluice types set T --durable`).
--   journal_bytes: the type's cap on one job's journal (NULL: the host default).
-- * sluice.journal_heads: one row per durable job that journaled anything: the
--   component its first attempt ran (pinned: every later attempt runs it, whatever the
--   type points at since), and the entries and bytes journaled so far (the cap is checked
--   against them by the append).
-- * sluice.journal: one row per host call the guest observed, keyed by (job_id, seq):
--   its kind (`wall-clock`, `monotonic-clock`, `random`, `http`, `secret`, `enqueue`),
--   the fingerprint of the request (for divergence), a short summary for people, the
--   recorded result, and the attempt that recorded it.
-- * No foreign keys to sluice.jobs: a per-row cascade fires for every deleted job, durable
--   or not (issue 42). The statements that delete jobs (retention, bulk delete) delete
--   their journal rows set-based in the same statement.
-- * Appends are fenced like completions (journal/append.sql): a stale attempt appends
--   nothing.
--
-- Upgrading a live database: two columns with constant defaults (no rewrite) and two new
-- tables. Hosts of earlier versions ignore `durable` and run such types as before.

ALTER TABLE sluice.job_types
    ADD COLUMN durable boolean NOT NULL DEFAULT false,
    ADD COLUMN journal_bytes bigint CONSTRAINT job_types_journal_bytes_check CHECK (journal_bytes > 0);

CREATE TABLE sluice.journal_heads (
    job_id       bigint  PRIMARY KEY,
    component_id bigint  NOT NULL,
    entries      integer NOT NULL CHECK (entries >= 0),
    bytes        bigint  NOT NULL CHECK (bytes >= 0)
);

CREATE TABLE sluice.journal (
    job_id      bigint      NOT NULL,
    seq         integer     NOT NULL CHECK (seq >= 0),
    kind        text        NOT NULL,
    request     text        NOT NULL,
    summary     text        NOT NULL,
    result      bytea       NOT NULL,
    attempt     integer     NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, seq)
);

COMMENT ON TABLE sluice.journal_heads IS
    'Per durable job: the pinned component and the journal''s size; deleted with its job.';
COMMENT ON TABLE sluice.journal IS
    'The host calls a durable job''s guest observed, in order; deleted with its job.';
