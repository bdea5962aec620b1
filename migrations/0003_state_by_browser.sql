-- Pending sign-ins are found by provider, state and browser together (the SHA-256 of the
-- browser-binding cookie), so that a state value a caller chose cannot collide with, replace
-- or block another browser's pending sign-in. The state itself is not stored, only
-- lookup = SHA-256(provider || NUL || state). Pending sign-ins live ten minutes; those in
-- flight when this migration runs are dropped (their callbacks answer invalid_state).

DROP TABLE sign_in_states;

CREATE TABLE sign_in_states (
    lookup        text NOT NULL,
    binding_hash  text NOT NULL,
    provider      text NOT NULL,
    redirect_uri  text NOT NULL,
    intent        text NOT NULL,
    code_verifier text,
    nonce         text,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    return_to     text,
    account_id    text,
    PRIMARY KEY (lookup, binding_hash)
);
CREATE INDEX sign_in_states_expires_idx ON sign_in_states (expires_at);
