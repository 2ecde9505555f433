-- What a narrow claimable table adds per job: an entry inserted at enqueue and deleted by
-- the claim (SKIP LOCKED, in claim order), 256 at a time.
SELECT (nextval('lever.batch') - 1) * 256 AS lo \gset
INSERT INTO lever.ready SELECT g, 'bench', 0, now() FROM generate_series(:lo + 1, :lo + 256) g;
DELETE FROM lever.ready r WHERE r.id IN (
  SELECT id FROM lever.ready ORDER BY priority DESC, run_at, id LIMIT 256 FOR UPDATE SKIP LOCKED);
