-- running → pending (retry after backoff) | dead | cancelled, for a batch.
-- $1 job ids (int8[]), $2 lease tokens (uuid[]), $3 errors (text[]), $4 fatal (bool[]),
-- $5 backoff base µs (float8[]), $6 backoff cap µs (float8[]), $7 jitter fractions
-- (float8[]), $8 fuel used (int8[], elements may be NULL); all in the same order.
-- $9 notification channel ('sluice_jobs'), $10 attempt logs (bytea[], NULL for an
-- attempt that logged nothing), $11 log bytes dropped at the cap (int8[]); in the order
-- of $1, whose ids are distinct and ascending (positions by `width_bucket`, as in
-- finish/complete_many.sql).
--
-- `held` locks every fenced row of the input (found by primary key as in
-- finish/complete_many.sql, in id order so two batches never deadlock on each other) and
-- decides where each goes: cancelled if a cancel was requested, dead if fatal or out of
-- attempts, else pending at now() + min(cap, base·2^(attempt-1))·(1 ± jitter·random()).
-- Every attempt moves into sluice.attempt_history in this statement; listeners get one
-- notice, the microseconds until the earliest retry. Stale leases match nothing and are
-- reported per job by the caller. An attempt with a log adds one row to
-- sluice.attempt_logs (migration 0017); a quiet one writes nothing more.
--
-- The statement is sluice.fail_batch(...) (migration 0020; its text is in
-- host/store/schema.sql), planned like sluice.complete_batch.
SELECT id, state, run_at, notified
FROM sluice.fail_batch($1::int8[], $2::uuid[], $3::text[], $4::bool[], $5::float8[], $6::float8[],
                       $7::float8[], $8::int8[], $9, $10::bytea[], $11::int8[])
