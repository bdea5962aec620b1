-- Tokens for machines: resource indicators (RFC 8707) and clients' own access tokens.
--
-- The resource servers an authorization request named are kept with its code, then with the
-- token family the code starts: a token request or a refresh may narrow them, never widen
-- them. Rows written before this version named none (their tokens are for their client).
ALTER TABLE oauth_codes ADD COLUMN resources text[] NOT NULL DEFAULT '{}';
ALTER TABLE oauth_token_families ADD COLUMN resources text[] NOT NULL DEFAULT '{}';

-- A client's own access token (client_credentials) has no family and no person: its
-- revocation is a row by its jti, kept until the token expires (then it is inactive anyway).
CREATE TABLE oauth_revoked_tokens (
    token_id   text PRIMARY KEY,
    client_id  text NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz NOT NULL
);
CREATE INDEX oauth_revoked_tokens_expires_idx ON oauth_revoked_tokens (expires_at);
