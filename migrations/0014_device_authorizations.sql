-- The OAuth 2.0 Device Authorization Grant (RFC 8628): a device's request while a person
-- approves it on another screen. Both codes are kept as their SHA-256 only: the device code
-- (256 random bits) is the key the device polls with; the user code (eight letters) is found
-- while pending. status: pending, then approved or denied by the person (account, session and
-- auth_time set then), then used once tokens were issued. interval grows by five seconds at
-- each slow_down. Kept until they expire (minutes); an approving account's deletion takes
-- its rows.
CREATE TABLE oauth_device_authorizations (
    device_code_hash text PRIMARY KEY,
    user_code_hash   text NOT NULL,
    client_id        text NOT NULL,
    scopes           text[] NOT NULL,
    status           text NOT NULL,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    poll_interval    integer NOT NULL,
    last_polled_at   timestamptz,
    account_id       uuid REFERENCES accounts (id) ON DELETE CASCADE,
    session_id       text,
    auth_time        timestamptz
);
CREATE INDEX oauth_device_authorizations_user_code_idx
    ON oauth_device_authorizations (user_code_hash);
CREATE INDEX oauth_device_authorizations_expires_idx
    ON oauth_device_authorizations (expires_at);
CREATE INDEX oauth_device_authorizations_account_idx
    ON oauth_device_authorizations (account_id);
