-- A pending link or re-authentication remembers the session that started it: its callback
-- completes only while that session is live, so signing out (everywhere) cancels it. Rows
-- written before have none, and such a callback is refused.

ALTER TABLE sign_in_states ADD COLUMN session_id text;
