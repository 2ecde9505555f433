-- How many secrets (of all tenants) are sealed under each key id.
SELECT key_id, count(*) AS secrets
FROM sluice.secrets
GROUP BY key_id
ORDER BY key_id
