-- The back-channel logouts owed to clients (OpenID Connect Back-Channel Logout 1.0): one row
-- per client that received tokens in an authgate session that ended, written in the
-- transaction that ended it (so no foreign key: a row outlives the account it names), sent by
-- a background worker of any instance (leased_until: the claim; FOR UPDATE SKIP LOCKED) as a
-- newly signed logout token at each attempt, deleted once the client answered 2xx or the
-- delivery was given up.
CREATE TABLE backchannel_logouts (
    id              text PRIMARY KEY,
    client_id       text NOT NULL,
    account_id      text NOT NULL,
    session_id      text NOT NULL,
    created_at      timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    leased_until    timestamptz,
    last_error      text
);
CREATE INDEX backchannel_logouts_due_idx ON backchannel_logouts (next_attempt_at);
