-- Sluice schema, part 4: API tokens and the tenant limits the HTTP API enforces.
--
-- A token is 32 random bytes shown once at creation; only its SHA-256 is stored. A fast
-- hash is right here (unlike passwords): the secret has 256 bits of entropy, so no
-- dictionary or brute force over the input space is possible whatever the hash speed,
-- and a fast hash keeps the lookup on every request to one index probe.

CREATE TABLE sluice.api_tokens (
    id          bigserial   PRIMARY KEY,
    -- The tenant the token acts for (an admin token may act for any tenant; this one is
    -- its default).
    tenant      text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    -- SHA-256 of the whole token string, as sent in `Authorization: Bearer ...`.
    token_hash  bytea       NOT NULL CONSTRAINT api_tokens_hash_length CHECK (octet_length(token_hash) = 32),
    admin       boolean     NOT NULL DEFAULT false,
    label       text        CONSTRAINT api_tokens_label_length CHECK (char_length(label) BETWEEN 1 AND 128),
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- Set once by `sluice tenants token revoke`; a revoked token is refused (401).
    revoked_at  timestamptz,
    CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash)
);

CREATE INDEX api_tokens_tenant_idx ON sluice.api_tokens (tenant, id);

-- Enqueue rate of the HTTP API (a token bucket per tenant and per `sluice serve`
-- process): `max_enqueue_per_sec` tokens are added per second up to `enqueue_burst`.
-- NULL rate means unlimited; NULL burst means "one second's worth" (at least 1).
ALTER TABLE sluice.tenants
    ADD COLUMN max_enqueue_per_sec double precision
        CONSTRAINT tenants_max_enqueue_per_sec_positive CHECK (max_enqueue_per_sec > 0),
    ADD COLUMN enqueue_burst integer
        CONSTRAINT tenants_enqueue_burst_positive CHECK (enqueue_burst > 0);
