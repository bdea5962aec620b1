-- Where each passkey came from: the session that added it, and the address and browser that
-- session ran on (kept with the passkey: a session's record is purged once it expired). The
-- account page and the export show them; signing out everywhere else may remove the passkeys
-- the sessions it ends added. Passkeys added before have none.
ALTER TABLE passkeys ADD COLUMN added_by_session text;
ALTER TABLE passkeys ADD COLUMN added_from_address text;
ALTER TABLE passkeys ADD COLUMN added_from_user_agent text;

-- The passkey a session was signed in with: removing the passkey ends its sessions, as
-- unlinking a provider ends the sessions signed in through it. Found by the account's index.
ALTER TABLE sessions ADD COLUMN passkey_id text;
