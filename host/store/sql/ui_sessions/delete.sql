-- Signs a browser out: deletes the session behind a cookie secret (nothing when unknown).
-- $1 SHA-256 of the cookie secret (bytea).
DELETE FROM sluice.ui_sessions WHERE secret_hash = $1
