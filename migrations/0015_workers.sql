-- Sluice schema, part 15: the worker registry (issue 20).
--
-- * sluice.workers: one row per process id that runs `sluice worker` (kind 'worker') or
--   `sluice scheduler` (kind 'scheduler'). A process registers at start (one guarded
--   upsert that refuses the id of a live process), renews last_heartbeat with its
--   heartbeat (a worker in the same statement that extends its jobs' leases), and sets
--   stopped_at when it shuts down. A row that is not stopped and whose last_heartbeat is
--   older than its lease is *lost* (the process died without stopping); nothing stores
--   that state: it is read against the database clock (docs/fleet.md).
-- * session: a random id per start, so a process that stops only ever stops its own
--   registration, never that of a later process that reused its id.
-- * Stopped and lost rows are deleted by retention after 7 days (docs/retention.md).
--
-- Upgrading a live database: a new table; running workers of earlier binaries do not
-- register and do not touch it.

CREATE TABLE sluice.workers (
    id             text PRIMARY KEY CHECK (id <> ''),
    kind           text NOT NULL CHECK (kind IN ('worker', 'scheduler')),
    session        uuid NOT NULL,
    hostname       text NOT NULL,
    pid            integer NOT NULL CHECK (pid >= 0),
    version        text NOT NULL,
    contracts      text[] NOT NULL,
    concurrency    integer CHECK (concurrency > 0),
    lease_us       bigint NOT NULL CHECK (lease_us > 0),
    started_at     timestamptz NOT NULL DEFAULT now(),
    last_heartbeat timestamptz NOT NULL DEFAULT now(),
    stopped_at     timestamptz
);
