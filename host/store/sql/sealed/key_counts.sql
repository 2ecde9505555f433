-- How many values of each sealed kind (every column sealed under the operator's keys)
-- are under each key id: tenant secrets, endpoints' signing secrets, and the previous
-- signing secrets endpoints keep (whether or not their grace has ended). The kind names
-- are those of SealedKind (host/store/src/sealed.rs).
SELECT 'tenant_secret' AS kind, key_id, count(*) AS n
FROM sluice.secrets
GROUP BY key_id
UNION ALL
SELECT 'webhook_secret', key_id, count(*)
FROM sluice.webhook_endpoints
GROUP BY key_id
UNION ALL
SELECT 'webhook_previous_secret', previous_key_id, count(*)
FROM sluice.webhook_endpoints
WHERE previous_key_id IS NOT NULL
GROUP BY previous_key_id
ORDER BY 1, 2
