-- Before each run: the same 153,600 pending rows in every copy, nothing else.
TRUNCATE lever.cur, lever.hot75, lever.hot50, lever.fin, lever.ready;
INSERT INTO lever.cur SELECT * FROM sluice.jobs WHERE state = 'pending' ORDER BY id LIMIT 153600;
INSERT INTO lever.hot75 SELECT * FROM lever.cur;
INSERT INTO lever.hot50 SELECT * FROM lever.cur;
VACUUM ANALYZE lever.cur, lever.hot75, lever.hot50, lever.fin, lever.ready;
ALTER SEQUENCE lever.batch RESTART;
CHECKPOINT;
