-- The server-side record of every session the service issues (never the token): so that a
-- session can be listed and ended before its token expires. No foreign key to accounts: an
-- account's sessions are revoked when it is deleted, and every record is purged once its
-- session expired.

CREATE TABLE sessions (
    id                  text PRIMARY KEY,
    account_id          text NOT NULL,
    provider            text NOT NULL,
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL,
    absolute_expires_at timestamptz NOT NULL,
    auth_time           timestamptz NOT NULL,
    client_address      text,
    user_agent          text,
    provider_session    text,
    revoked_at          timestamptz
);
CREATE INDEX sessions_account_idx ON sessions (account_id, created_at);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- The data-protection export reads one account's events.
CREATE INDEX sign_in_events_account_idx ON sign_in_events (account_id, at);
