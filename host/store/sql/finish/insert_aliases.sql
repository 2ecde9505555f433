-- Follow-up jobs that were not inserted because their idempotency key named a job already
-- (or an earlier one in the same batch): their reserved ids stand for that job from now on
-- (sluice.follow_up_aliases, migration 0029), in the transaction of the suspension or
-- completion that asked for them (Store::insert_children_once). A place aliased before
-- keeps its first alias.
-- $1 reserved ids (int8[]), $2 parent ids (int8[]), $3 places (int4[]), $4 the jobs they
-- stand for (int8[]).
INSERT INTO sluice.follow_up_aliases (id, parent_id, parent_seq, job_id)
SELECT * FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::int8[])
ON CONFLICT DO NOTHING
