-- The next integer version of a component name ("1" when it has none).
-- $1 tenant (text), $2 name (text).
SELECT (coalesce(max(version::numeric) FILTER (WHERE version ~ '^[0-9]{1,30}$'), 0) + 1)::text
FROM sluice.components
WHERE tenant = $1 AND name = $2
