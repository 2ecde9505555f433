-- Appends entries to a durable job's journal under the attempt's lease, in one statement:
-- nothing is written unless the job is `running` with this lease token (a stale attempt
-- appends nothing and learns that its lease is lost), nor when the journal would grow
-- past its cap. The first append also pins the component the job runs (journal_heads);
-- later ones keep the pinned one. The entries' sequence numbers continue the journal's
-- (the primary key refuses a gap-free duplicate: an attempt that replayed fewer entries
-- than are stored cannot append over them).
-- Returns one row: fenced (the lease held), appended (within the cap), bytes (the
-- journal's size with these entries, appended or not).
-- $1 job id (int8), $2 lease token (uuid), $3 component id (int8), $4 cap in bytes
-- (int8), $5 seq (int4[]), $6 kind (text[]), $7 request (text[]), $8 summary (text[]),
-- $9 result (bytea[]).
WITH fence AS (
    SELECT id, attempt FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
),
new AS (
    SELECT * FROM unnest($5::int4[], $6::text[], $7::text[], $8::text[], $9::bytea[])
        AS n(seq, kind, request, summary, result)
),
size AS (
    SELECT count(*)::int4 AS entries,
           coalesce(sum(octet_length(kind) + octet_length(request) + octet_length(summary)
                        + octet_length(result)), 0)::int8 AS bytes
    FROM new
),
head AS (
    INSERT INTO sluice.journal_heads AS h (job_id, component_id, entries, bytes)
    SELECT f.id, $3, s.entries, s.bytes FROM fence f, size s
    WHERE s.bytes <= $4
    ON CONFLICT (job_id) DO UPDATE
        SET entries = h.entries + EXCLUDED.entries, bytes = h.bytes + EXCLUDED.bytes
        WHERE h.bytes + EXCLUDED.bytes <= $4
    RETURNING h.job_id, h.bytes
),
appended AS (
    INSERT INTO sluice.journal (job_id, seq, kind, request, summary, result, attempt)
    SELECT h.job_id, n.seq, n.kind, n.request, n.summary, n.result, f.attempt
    FROM head h, fence f, new n
)
SELECT EXISTS (SELECT 1 FROM fence) AS fenced,
       EXISTS (SELECT 1 FROM head) AS appended,
       coalesce((SELECT h.bytes FROM sluice.journal_heads h WHERE h.job_id = $1), 0)
           + (SELECT bytes FROM size) AS bytes
