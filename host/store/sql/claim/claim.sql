-- pending → running: claims up to $2 due jobs in one statement through sluice.claim(...)
-- (migrations 0007..0009; its current text is in host/store/schema.sql): locks the capped
-- tenants that have ready work, interleaves tenants by how many jobs each runs
-- (docs/fairness.md), locks rows with SKIP LOCKED and starts each attempt on its row.
-- Flow control (migration 0024, docs/flow-control.md): paused tenants and types are left,
-- and jobs of the keys' lane are taken within their type's and key's caps and rates.
-- $1 worker (text), $2 limit (int4, 1..=10000), $3 lease in microseconds (int8),
-- $4 tenants or NULL for all (text[]), $5 job types or NULL for all (text[]),
-- $6 the newest contract this host runs (int2: N of sluice:task@0.N.0; migration 0012):
-- jobs whose type's component targets a newer one stay pending for a newer host,
-- $7 the key ids of the secrets keys this host holds (text[]; migration 0013): jobs whose
-- type is granted secrets it cannot open (no key, or a secret under another key) stay
-- pending, and so do the webhook deliveries of tenants with an endpoint whose signing
-- secret (or previous one, while it signs) is under another key (migration 0022),
-- $8 tenants whose jobs this claim leaves pending, or NULL (text[]; migration 0021): a
-- worker's spare slot claims only for tenants with nothing executing on it.
-- Each row also carries the job's trace context and when it was due (migration 0034).
SELECT id, tenant, job_type, payload, priority, attempt, max_attempts, lease_token, locked_until,
       traceparent, tracestate, due_at
FROM sluice.claim($1, $2, $3, $4, $5, $6, $7, $8)
