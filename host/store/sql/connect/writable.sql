-- Whether the server this connection landed on takes writes: not a standby, and not
-- read-only by default (libpq's target_session_attrs=read-write asks the same).
-- No parameters. Sent as a simple query (no prepared statement), so it also runs
-- through a transaction pooler.
SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'
