-- Which follow-up jobs of some parents exist already, as (parent id, place), for
-- Store::insert_children_once (follow_ups.rs), in the transaction of a suspension or a
-- completion that holds the parents' rows: a run that replayed the journal buffers the
-- same `enqueue` calls again, in the same places, and those are skipped instead of
-- hitting jobs_parent_uidx or, with their reserved ids, jobs_pkey. A place whose child
-- was folded onto an existing job by its key (follow_up_aliases, migration 0029) counts
-- as existing. Uses jobs_parent_uidx and follow_up_aliases_place_uidx.
-- $1 parent job ids (int8[]).
SELECT parent_id, parent_seq
FROM sluice.jobs
WHERE parent_id = ANY ($1::int8[])
UNION ALL
SELECT parent_id, parent_seq
FROM sluice.follow_up_aliases
WHERE parent_id = ANY ($1::int8[])
