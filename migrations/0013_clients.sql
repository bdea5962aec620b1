-- Clients kept in the database rather than the configuration file: registered at run time
-- (RFC 7591, managed by RFC 7592) or added by the operator (authgate clients add). The
-- metadata is the client's RFC 7591 JSON document; secrets are salted SHA-256 digests (JSON),
-- the registration access token only its digest. Configured clients are not here.
CREATE TABLE oauth_clients (
    client_id               text PRIMARY KEY,
    origin                  text NOT NULL,
    metadata                text NOT NULL,
    secrets                 text NOT NULL,
    registration_token_hash text,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL
);

-- The initial access tokens the operator hands out (authgate clients token), each good for
-- one registration until it expires; kept as digests, and dropped once spent or expired.
CREATE TABLE oauth_initial_tokens (
    token_hash text PRIMARY KEY,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    spent_at   timestamptz
);
