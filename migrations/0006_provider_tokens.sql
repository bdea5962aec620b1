-- Provider tokens kept for revocation, sealed (JWE dir/A256GCM under a configured key named
-- by key_id): one per account and provider, replaced at each sign-in, gone with the identity.
-- Never the plaintext token.

CREATE TABLE provider_tokens (
    account_id text NOT NULL,
    provider   text NOT NULL,
    subject    text NOT NULL,
    key_id     text NOT NULL,
    ciphertext text NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, provider),
    FOREIGN KEY (provider, subject) REFERENCES identities (provider, subject) ON DELETE CASCADE
);
CREATE INDEX provider_tokens_identity_idx ON provider_tokens (provider, subject);
CREATE INDEX provider_tokens_key_idx ON provider_tokens (key_id);

-- The revocation outbox: written in the transaction that unlinks an identity or deletes an
-- account (so no foreign key: it outlives both), processed by a background worker of any
-- instance (leased_until: the claim; FOR UPDATE SKIP LOCKED), deleted once the provider
-- confirmed or the revocation was given up.
CREATE TABLE provider_token_revocations (
    id              text PRIMARY KEY,
    account_id      text NOT NULL,
    provider        text NOT NULL,
    subject         text NOT NULL,
    key_id          text NOT NULL,
    ciphertext      text NOT NULL,
    created_at      timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    leased_until    timestamptz,
    last_error      text
);
CREATE INDEX provider_token_revocations_due_idx ON provider_token_revocations (next_attempt_at);
