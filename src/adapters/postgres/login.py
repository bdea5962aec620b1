"""A login's look-up and writes as one statement (issue 13).

A login reads its identity with the account (is it held? disabled?) and then writes the last
sign-in time, the session's record, the audit event and perhaps the sealed provider token, all
for the account it read: two round trips through :class:`~.unit.UnitConnection`. Here the
writes are data-modifying ``WITH`` clauses that take the account from the look-up in the same
statement, so they apply exactly when an account holds the identity and it is not disabled,
and the statement returns what the look-up found. One statement is atomic by itself: no
transaction, as for the unit's combined write.
"""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.adapters.units import BoundRepositories
from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity
from authgate.ports.unit_of_work import HolderWrites

from . import rows
from .accounts import WITH_IDENTITY
from .events import PostgresEvents
from .sessions import PostgresSessionRecords, record_values
from .unit import UnitConnection

_HELD = """,
held AS (SELECT id FROM found WHERE disabled_reason IS NULL),
login AS (UPDATE accounts SET last_login_at = $3 WHERE id = (SELECT id FROM held)),
session AS (
    INSERT INTO sessions (id, account_id, provider, created_at, expires_at,
        absolute_expires_at, auth_time, client_address, user_agent, provider_session,
        revoked_at)
    SELECT $4::text, id::text, $5::text, $6::timestamptz, $7::timestamptz, $8::timestamptz,
        $9::timestamptz, $10::text, $11::text, $12::text, $13::timestamptz
    FROM held),
event AS (
    INSERT INTO sign_in_events (at, provider, outcome, client_address, user_agent, account_id,
        detail)
    SELECT $14::timestamptz, $15::text, $16::text, $17::text, $18::text, id::text, $19::text
    FROM held)
"""

_SEALED = """,
kept AS (
    INSERT INTO provider_tokens (account_id, provider, subject, key_id, ciphertext, updated_at)
    SELECT id::text, $20::text, $21::text, $22::text, $23::text, $24::timestamptz FROM held
    ON CONFLICT (account_id, provider) DO UPDATE SET subject = EXCLUDED.subject,
        key_id = EXCLUDED.key_id, ciphertext = EXCLUDED.ciphertext,
        updated_at = EXCLUDED.updated_at)
"""

_FOUND = "SELECT * FROM found"

# The look-up is the accounts adapter's own (the same columns, read the same way).
_LOOK_UP = "WITH found AS (" + WITH_IDENTITY + ")"
WITHOUT_SEALED = _LOOK_UP + _HELD + _FOUND
WITH_SEALED = _LOOK_UP + _HELD + _SEALED + _FOUND


@attrs.frozen
class PostgresBoundRepositories(BoundRepositories):
    """The repositories of a PostgreSQL unit of work (on ``unit``), its login in one
    statement."""

    unit: UnitConnection

    async def sign_in_to_holder(
        self, identity: ProviderIdentity, now: dt.datetime, writes: HolderWrites
    ) -> tuple[LinkedIdentity, Account] | None:
        unit = self.unit
        if not unit.is_untouched():  # not the unit's first: the repositories, in order
            return await super().sign_in_to_holder(identity, now, writes)
        session, event, token = writes.session, writes.event, writes.token
        # The session's values but its account_id (the statement's own, from the look-up).
        session_id, _, *session_rest = record_values(session)
        args: list[object] = [
            identity.provider,
            identity.subject,
            rows.utc(now),
            session_id,
            *session_rest,
            rows.utc(event.at),
            event.provider,
            event.outcome.value,
            event.client_address,
            event.user_agent,
            event.detail,
        ]
        if token is not None:
            args += [
                token.identity.provider,
                token.identity.subject,
                token.sealed.key_id,
                token.sealed.ciphertext,
                rows.utc(token.updated_at),
            ]
        row = await unit.statement_alone(WITH_SEALED if token else WITHOUT_SEALED, args)
        if row is None:
            return None
        found = rows.linked_identity(row, own="identity_"), rows.account(row)
        if found[0].disabled_reason is None:
            # What the repositories' own writes do after writing: their periodic purges.
            assert isinstance(self.sessions, PostgresSessionRecords)
            assert isinstance(self.events, PostgresEvents)
            self.sessions.written(session.created_at)
            self.events.written(event.at)
        return found
