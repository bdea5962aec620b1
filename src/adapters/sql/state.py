"""Pending sign-ins (state), and passkey ceremonies' challenges: rows one browser puts and
takes back once."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

from authgate.domain.model import Intent, PendingSignIn
from authgate.domain.passkeys import Ceremony, PasskeyChallenge
from authgate.domain.secrets import state_lookup

from .engine import insert
from .housekeeping import Purging

_PENDING = (
    "provider, redirect_uri, intent, code_verifier, nonce, binding_hash, created_at, "
    "expires_at, return_to, account_id, session_id"
)
_PUT_PENDING = insert("sign_in_states", f"lookup, {_PENDING}", "lookup, binding_hash")
_PUT_CHALLENGE = insert(
    "passkey_challenges",
    "binding_hash, ceremony, challenge, account_id, session_id, created_at, expires_at",
    "binding_hash, ceremony",
)


class SqlStates(Purging):
    """:class:`~authgate.ports.state.StateStore`, keyed by ``(lookup, binding_hash)``: the
    hash of provider and state, and the hash of the browser's binding cookie. ``put`` triggers
    the purge of expired rows."""

    _purged = "expired sign-in states"

    async def put(self, pending: PendingSignIn) -> None:
        time = self._sql.time
        # The same browser starting the same provider with the same state again replaces its
        # own earlier entry; nobody else's row can have this key.
        await self._db.execute(
            _PUT_PENDING,
            state_lookup(pending.provider, pending.state),
            pending.provider,
            pending.redirect_uri,
            pending.intent.value,
            pending.code_verifier,
            pending.nonce,
            pending.binding_hash,
            time(pending.created_at),
            time(pending.expires_at),
            pending.return_to,
            pending.account_id,
            pending.session_id,
        )
        await self.written(pending.created_at)

    async def take(
        self, provider: str, state: str, binding_hash: str | None, now: dt.datetime
    ) -> PendingSignIn | None:
        sql = self._sql
        lookup = state_lookup(provider, state)
        # One statement: of concurrent takes exactly one deletes the row and gets it back.
        if binding_hash is not None:
            row = await self._db.fetchrow(
                "DELETE FROM sign_in_states WHERE lookup = $1 AND binding_hash = $2 "  # noqa: S608 - constant columns, the dialect's lock
                f"RETURNING {_PENDING}",
                lookup,
                binding_hash,
            )
        else:
            # No binding cookie (admitted by configuration): the newest live entry of any
            # browser; a lock skipping locked rows keeps concurrent takes from sharing one.
            row = await self._db.fetchrow(
                f"DELETE FROM sign_in_states WHERE {sql.rowid} = ("  # noqa: S608
                f"SELECT {sql.rowid} FROM sign_in_states WHERE lookup = $1 AND expires_at > $2 "
                f"ORDER BY created_at DESC LIMIT 1{sql.lock('UPDATE SKIP LOCKED')}) "
                f"RETURNING {_PENDING}",
                lookup,
                sql.time(now),
            )
        # Compared as stored: both engines' times order as the times they keep.
        if row is None or row[7] <= sql.time(now):
            return None
        return PendingSignIn(
            state=state,
            provider=row[0],
            redirect_uri=row[1],
            intent=Intent(row[2]),
            code_verifier=row[3],
            nonce=row[4],
            binding_hash=row[5],
            created_at=sql.read_time(row[6]),
            expires_at=sql.read_time(row[7]),
            return_to=row[8],
            account_id=row[9],
            session_id=row[10],
        )

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._batches("sign_in_states", now)


class SqlPasskeyChallenges(Purging):
    """:class:`~authgate.ports.passkeys.PasskeyChallenges`, keyed by
    ``(binding_hash, ceremony)``; ``put`` triggers the purge of expired rows."""

    _purged = "expired passkey challenges"

    async def put(self, challenge: PasskeyChallenge) -> None:
        await self._db.execute(
            _PUT_CHALLENGE,
            challenge.binding_hash,
            challenge.ceremony.value,
            challenge.challenge,
            challenge.account_id,
            challenge.session_id,
            self._sql.time(challenge.created_at),
            self._sql.time(challenge.expires_at),
        )
        await self.written(challenge.created_at)

    async def take(
        self, binding_hash: str, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge | None:
        # One statement: of concurrent takes exactly one deletes the row and gets it back.
        row = await self._db.fetchrow(
            """
            DELETE FROM passkey_challenges WHERE binding_hash = $1 AND ceremony = $2
            RETURNING challenge, account_id, session_id, created_at, expires_at
            """,
            binding_hash,
            ceremony.value,
        )
        if row is None or row[4] <= self._sql.time(now):
            return None
        return PasskeyChallenge(
            binding_hash=binding_hash,
            ceremony=ceremony,
            challenge=bytes(row[0]),
            account_id=row[1],
            session_id=row[2],
            created_at=self._sql.read_time(row[3]),
            expires_at=self._sql.read_time(row[4]),
        )

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._batches("passkey_challenges", now)
