-- Provider events (issue 12): Apple server-to-server notifications, Google RISC security
-- event tokens and OpenID Connect back-channel logout.

-- The one-time jti of every event acted on, kept until an event of that age would be refused
-- anyway (its iat too old); written in the same transaction as what the event changed.
CREATE TABLE provider_event_ids (
    issuer     text NOT NULL,
    jti        text NOT NULL,
    seen_at    timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (issuer, jti)
);
CREATE INDEX provider_event_ids_expires_idx ON provider_event_ids (expires_at);

-- What the provider said about the identity: sign-ins refused while disabled_reason is set
-- (RISC account-disabled, until account-enabled); mail forwarding turned off (Apple).
ALTER TABLE identities ADD COLUMN disabled_reason text;
ALTER TABLE identities ADD COLUMN email_disabled boolean NOT NULL DEFAULT false;

-- Back-channel logout finds the sessions of a provider's sid.
CREATE INDEX sessions_provider_session_idx ON sessions (provider, provider_session)
    WHERE provider_session IS NOT NULL;
