-- Sends the webhook event `sluice.quota.reached` (docs/usage.md) for each daily quota of
-- the tenants among $1 (text[]) that is used up today, at most once per tenant, quota and
-- UTC day: the event's idempotency key names the quota and the day. Run after a batch of
-- usage is written (host/store/src/usage.rs), in its own statement so that it sees that
-- batch; only tenants with a quota are read (tenants_quota_idx).
SELECT sluice.send_event(
           t.id, 'sluice.quota.reached',
           jsonb_build_object(
               'tenant', t.id, 'quota', q.quota, 'used', q.used, 'limit', q.lim,
               'day', sluice.quota_today(),
               'resumes_at', to_char(sluice.quota_today() + 1, 'YYYY-MM-DD"T00:00:00Z"')),
           'sluice.quota.reached/' || q.quota || '/' || sluice.quota_today())
FROM sluice.tenants t
CROSS JOIN LATERAL sluice.quota_used(t.id) u
CROSS JOIN LATERAL (VALUES ('attempts', u.attempts, t.max_attempts_per_day),
                           ('fuel', u.fuel, t.max_fuel_per_day),
                           ('egress_bytes', u.egress_bytes, t.max_egress_bytes_per_day))
     AS q(quota, used, lim)
WHERE t.quota AND t.id = ANY ($1::text[]) AND q.lim IS NOT NULL AND q.used >= q.lim
ORDER BY t.id, q.quota
