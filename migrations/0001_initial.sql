-- Accounts, the provider identities they hold, pending sign-ins (state) and sign-in events.
-- Applied by `authgate migrate --config FILE` inside one transaction.

CREATE TABLE accounts (
    id            uuid PRIMARY KEY,
    email         text,
    name          text,
    profile       jsonb NOT NULL DEFAULT '{}'::jsonb,  -- provider profile data at creation
    created_at    timestamptz NOT NULL,
    last_login_at timestamptz
);

-- The account key {provider}:{subject} (spec 2.8). The primary key is the unique constraint
-- that makes concurrent first sign-ins of one identity create exactly one account.
CREATE TABLE identities (
    provider   text NOT NULL,
    subject    text NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email      text,
    linked_at  timestamptz NOT NULL,
    is_primary boolean NOT NULL DEFAULT false,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX identities_account_idx ON identities (account_id, linked_at);

-- Pending sign-ins, taken once by their callback. account_id is the caller's account for
-- intent=link, copied from a session token: no foreign key (the state is short-lived).
CREATE TABLE sign_in_states (
    state         text PRIMARY KEY,
    provider      text NOT NULL,
    redirect_uri  text NOT NULL,
    intent        text NOT NULL,
    code_verifier text,
    nonce         text,
    binding_hash  text NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    return_to     text,
    account_id    text
);
CREATE INDEX sign_in_states_expires_idx ON sign_in_states (expires_at);

-- The audit log. No foreign key: an event outlives what it mentions.
CREATE TABLE sign_in_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL,
    provider       text NOT NULL,
    outcome        text NOT NULL,
    client_address text,
    user_agent     text,
    account_id     text,
    detail         text
);
CREATE INDEX sign_in_events_at_idx ON sign_in_events (at);
