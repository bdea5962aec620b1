-- Passkeys (WebAuthn credentials), a sign-in method of an account beside its identities: the
-- authenticator's credential id (unique across accounts), its COSE public key, the signature
-- counter last seen, and what the person sees (name, backed up or not, times). They go with
-- their account (ON DELETE CASCADE: in the transaction that deletes it).
CREATE TABLE passkeys (
    id              text PRIMARY KEY,
    credential_id   bytea NOT NULL UNIQUE,
    account_id      uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    public_key      bytea NOT NULL,
    sign_count      bigint NOT NULL,
    transports      text[] NOT NULL,
    aaguid          text NOT NULL,
    backup_eligible boolean NOT NULL,
    backed_up       boolean NOT NULL,
    name            text NOT NULL,
    created_at      timestamptz NOT NULL,
    last_used_at    timestamptz
);
CREATE INDEX passkeys_account_idx ON passkeys (account_id, created_at);

-- The challenges of passkey ceremonies: single use, 5 minutes, one per browser (the SHA-256 of
-- its binding cookie) and ceremony; purged in batches like pending sign-ins.
CREATE TABLE passkey_challenges (
    binding_hash text NOT NULL,
    ceremony     text NOT NULL,
    challenge    bytea NOT NULL,
    account_id   text,
    session_id   text,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (binding_hash, ceremony)
);
CREATE INDEX passkey_challenges_expires_idx ON passkey_challenges (expires_at);
