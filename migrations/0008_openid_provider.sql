-- authgate as an OpenID Provider for its registered applications (clients): authorization
-- codes, token families with their refresh tokens, consents (grants) and the clients of each
-- session. Codes and refresh tokens are kept as their SHA-256 only. Everything here belongs to
-- an account and goes with it (ON DELETE CASCADE); session ids have no foreign key, as
-- sessions' records are purged on their own schedule.

-- Authorization codes: redeemed once (redeemed_at set by one UPDATE), family_id what that
-- redemption issued, so that a replay revokes it. Kept until they expire (at most a minute).
CREATE TABLE oauth_codes (
    code_hash      text PRIMARY KEY,
    client_id      text NOT NULL,
    account_id     uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    session_id     text NOT NULL,
    redirect_uri   text NOT NULL,
    scopes         text[] NOT NULL,
    nonce          text,
    code_challenge text NOT NULL,
    auth_time      timestamptz NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    redeemed_at    timestamptz,
    family_id      text
);
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at);
CREATE INDEX oauth_codes_account_idx ON oauth_codes (account_id);

-- What one redeemed code issued. A refresh token or access token is usable only while its
-- family is not revoked: revoking is one row, and a rotation committing meanwhile cannot leave
-- a live token behind. expires_at covers every token of the family (moved on rotation).
CREATE TABLE oauth_token_families (
    family_id  text PRIMARY KEY,
    client_id  text NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    session_id text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    -- the target of the refresh tokens' foreign key: a token has its family's owners
    UNIQUE (family_id, client_id, account_id, session_id)
);
CREATE INDEX oauth_token_families_account_idx
    ON oauth_token_families (account_id, client_id, created_at);
CREATE INDEX oauth_token_families_session_idx ON oauth_token_families (session_id);
CREATE INDEX oauth_token_families_expires_idx ON oauth_token_families (expires_at);

-- Refresh tokens, rotated at every use: the replaced ones are kept until they expire, so that
-- presenting one again is recognised as reuse and revokes the family.
CREATE TABLE oauth_refresh_tokens (
    token_hash  text PRIMARY KEY,
    family_id   text NOT NULL,
    client_id   text NOT NULL,
    account_id  uuid NOT NULL,
    session_id  text NOT NULL,
    scopes      text[] NOT NULL,
    auth_time   timestamptz NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    replaced_at timestamptz,
    FOREIGN KEY (family_id, client_id, account_id, session_id)
        REFERENCES oauth_token_families (family_id, client_id, account_id, session_id)
        ON DELETE CASCADE
);
CREATE INDEX oauth_refresh_tokens_family_idx ON oauth_refresh_tokens (family_id);
CREATE INDEX oauth_refresh_tokens_expires_idx ON oauth_refresh_tokens (expires_at);

-- Consents: one per account and client.
CREATE TABLE oauth_grants (
    account_id   uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_id    text NOT NULL,
    scopes       text[] NOT NULL,
    granted_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    PRIMARY KEY (account_id, client_id)
);

-- The clients that received tokens in a session: back-channel logout's addressees, kept until
-- the session's absolute expiry.
CREATE TABLE oauth_session_clients (
    session_id text NOT NULL,
    client_id  text NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    first_at   timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (session_id, client_id)
);
CREATE INDEX oauth_session_clients_account_idx ON oauth_session_clients (account_id, first_at);
CREATE INDEX oauth_session_clients_expires_idx ON oauth_session_clients (expires_at);
