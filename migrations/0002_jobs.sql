-- Sluice schema, part 2: the queue. See docs/state-machine.md for every transition.

-- One Rust enum mirrors this type: sluice_store::JobState.
CREATE TYPE sluice.job_state AS ENUM ('pending', 'running', 'completed', 'dead', 'cancelled');

-- How long an idempotency key stays taken (sluice_store::KeyScope):
--   retained   -- while the job row exists (until retention prunes it);
--   unfinished -- only while the job is pending or running.
CREATE TYPE sluice.key_scope AS ENUM ('retained', 'unfinished');

-- No foreign keys to tenants/job_types on purpose: an FK check takes FOR KEY SHARE on
-- the referenced row for every insert, and thousands of concurrent enqueues for one job
-- type would pile up on one row as a MultiXact. The enqueue statement checks that the
-- tenant and job type exist in the same statement instead and returns typed errors.
-- The cost: deleting a job type does not stop its already-queued jobs; the worker
-- finds no job type at claim time and fails them.
CREATE TABLE sluice.jobs (
    id               bigserial        PRIMARY KEY,
    tenant           text             NOT NULL,
    job_type         text             NOT NULL CONSTRAINT jobs_job_type_length CHECK (char_length(job_type) BETWEEN 1 AND 128),
    payload          bytea            NOT NULL,
    priority         smallint         NOT NULL DEFAULT 0,
    state            sluice.job_state NOT NULL DEFAULT 'pending',
    run_at           timestamptz      NOT NULL DEFAULT now(),
    -- Number of the attempt that is running or last ran; 0 before the first claim.
    attempt          integer          NOT NULL DEFAULT 0,
    max_attempts     integer          NOT NULL CONSTRAINT jobs_max_attempts_positive CHECK (max_attempts >= 1),
    idempotency_key  text             CONSTRAINT jobs_idempotency_key_length CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    key_scope        sluice.key_scope NOT NULL DEFAULT 'retained',
    locked_by        text,
    locked_until     timestamptz,
    lease_token      uuid,
    cancel_requested boolean          NOT NULL DEFAULT false,
    last_error       text,
    output           bytea,
    created_at       timestamptz      NOT NULL DEFAULT now(),
    updated_at       timestamptz      NOT NULL DEFAULT now(),
    finished_at      timestamptz,

    CONSTRAINT jobs_attempt_range CHECK (attempt BETWEEN 0 AND max_attempts),
    -- A pending job always has an attempt left (the claim adds one).
    CONSTRAINT jobs_pending_has_attempt_left CHECK (state <> 'pending' OR attempt < max_attempts),
    -- finished_at is set exactly in the terminal states.
    CONSTRAINT jobs_finished_at_iff_terminal
        CHECK ((finished_at IS NOT NULL) = (state IN ('completed', 'dead', 'cancelled'))),
    -- The lease columns are set exactly while running, and a running job has used an attempt.
    CONSTRAINT jobs_lease_iff_running CHECK (
        (state = 'running') = (locked_by IS NOT NULL)
        AND (state = 'running') = (locked_until IS NOT NULL)
        AND (state = 'running') = (lease_token IS NOT NULL)
        AND (state <> 'running' OR attempt >= 1)
    ),
    -- A cancel request only means something while the job runs; every exit from
    -- `running` clears it.
    CONSTRAINT jobs_cancel_requested_only_running CHECK (NOT cancel_requested OR state = 'running')
) WITH (
    -- Every state change rewrites the row (state is in partial-index predicates, so no
    -- HOT updates), but heartbeats and the claim's new version can still land on the
    -- same page when there is room: keep a quarter of each page free.
    fillfactor = 75,
    -- A queue table churns: vacuum after ~1% of rows are dead instead of 20%, analyze
    -- after 2%, and vacuum insert-only bursts too so the visibility map stays fresh.
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

-- The claim query, exactly: WHERE state = 'pending' AND run_at <= now()
-- ORDER BY priority DESC, run_at, id. Scheduled (future) jobs are in it too and are
-- skipped by the run_at filter while walking it in order.
CREATE INDEX jobs_claim_idx ON sluice.jobs (priority DESC, run_at, id)
    WHERE state = 'pending';

-- Claims restricted to some tenants (dedicated workers, per-tenant fairness): without
-- this, a worker for a small tenant would walk every other tenant's backlog in
-- jobs_claim_idx. Claims filtered by job type only have no index of their own: they
-- walk jobs_claim_idx with a filter (cheap when that type is a fair share of the queue).
CREATE INDEX jobs_claim_tenant_idx ON sluice.jobs (tenant, priority DESC, run_at, id)
    WHERE state = 'pending';

-- The reaper: running jobs whose lease expired.
CREATE INDEX jobs_lease_idx ON sluice.jobs (locked_until)
    WHERE state = 'running';

-- Retention: terminal jobs by age, per state (prune uses one literal state set per class).
CREATE INDEX jobs_finished_idx ON sluice.jobs (state, finished_at)
    WHERE state IN ('completed', 'dead', 'cancelled');

-- Deliberately no (tenant, id) index for listing: a non-partial index gets a new entry on
-- every state change and heartbeat (none of them is a HOT update) and costs ~20% of bulk
-- enqueue throughput. A tenant's listing with a state filter is served by the partial
-- indexes above (pending: jobs_claim_tenant_idx, running: jobs_lease_idx, finished:
-- jobs_finished_idx, all bounded by retention); without one it walks the primary key
-- backwards, which is fast for active tenants. Add the index if sparse tenants' listings
-- become slow.

-- Idempotency. A row "holds" its key when it has one and it is retained-scoped (for as
-- long as the row exists) or unfinished-scoped and still pending or running. At most one
-- row per (tenant, key) may hold it, whatever the scopes: a retained key blocks an
-- unfinished one and vice versa. One index expresses exactly that; two separate indexes
-- (one per scope) could not, because each would only compare rows of its own scope.
-- Keys are per tenant: the same key in two tenants is two jobs.
CREATE UNIQUE INDEX jobs_idempotency_key_uidx ON sluice.jobs (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL
      AND (key_scope = 'retained' OR state IN ('pending', 'running'));
