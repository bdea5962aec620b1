"""Authorization codes, token families with their refresh tokens, the revoked access tokens
of clients' own, grants and session clients.

The writes whose result nobody reads wait, in a unit of work that lets them, for the unit's
other writes, so a token response's unit costs the code's redemption and one combined write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import attrs

from authgate.domain.openid.records import (
    AuthorizationCode,
    Grant,
    RefreshToken,
    SessionClient,
    TokenFamily,
)
from authgate.ports.openid import AlreadyUsed, Redeemed, Reused, Rotated

from .engine import Db, Dialect, Row, insert
from .housekeeping import Purging, Repository, utc


def _key(sql: Dialect, account_id: str) -> object:
    """The account id as the tables hold it; ValueError for one that cannot be an account's."""
    key = sql.account_key(account_id)
    if key is None:
        raise ValueError("not an account id")
    return key


def _opt_time(sql: Dialect, value: dt.datetime | None) -> object:
    return sql.time(value) if value is not None else None


def _read_opt(sql: Dialect, value: object) -> dt.datetime | None:
    return sql.read_time(value) if value is not None else None


# -- authorization codes ------------------------------------------------------------------

_CODE_COLUMNS = (
    "code_hash, client_id, account_id, session_id, redirect_uri, scopes, nonce, "
    "code_challenge, auth_time, created_at, expires_at, resources"
)
_INSERT_CODE = insert("oauth_codes", _CODE_COLUMNS)


class SqlAuthorizationCodes(Purging):
    """:class:`~authgate.ports.openid.AuthorizationCodes`: a redemption is one
    ``UPDATE … WHERE redeemed_at IS NULL``; ``add`` triggers the purge of expired codes."""

    _purged = "expired authorization codes"

    async def add(self, code: AuthorizationCode) -> None:
        sql = self._sql
        await self._db.write(
            _INSERT_CODE,
            code.code_hash,
            code.client_id,
            _key(sql, code.account_id),
            code.session_id,
            code.redirect_uri,
            sql.scopes(code.scopes),
            code.nonce,
            code.code_challenge,
            sql.time(code.auth_time),
            sql.time(code.created_at),
            sql.time(code.expires_at),
            sql.scopes(code.resources),
        )
        await self.written(code.created_at)

    async def redeem(self, code_hash: str, now: dt.datetime) -> Redeemed | AlreadyUsed | None:
        won = await self._db.fetchrow(
            "UPDATE oauth_codes SET redeemed_at = $2 "  # noqa: S608 - constant columns
            "WHERE code_hash = $1 AND redeemed_at IS NULL AND expires_at > $2 "
            f"RETURNING {_CODE_COLUMNS}",
            code_hash,
            self._sql.time(now),
        )
        if won is not None:
            return Redeemed(self._code(won))
        # A statement of its own: it sees what a concurrent redemption committed meanwhile,
        # its family included.
        kept = await self._db.fetchrow(
            f"SELECT {_CODE_COLUMNS}, redeemed_at, family_id "  # noqa: S608 - constant columns
            "FROM oauth_codes WHERE code_hash = $1",
            code_hash,
        )
        if kept is None or kept[12] is None:
            return None
        return AlreadyUsed(self._code(kept), kept[13])

    async def record_issued(self, code_hash: str, family_id: str) -> None:
        await self._db.write(
            "UPDATE oauth_codes SET family_id = $2 WHERE code_hash = $1", code_hash, family_id
        )

    async def discard_outstanding(self, account_id: str, client_id: str) -> int:
        key = self._sql.account_key(account_id)
        if key is None:
            return 0
        # Sent now, not with a unit's waiting writes: a redemption holding a code's row lock
        # is waited for here, before the unit goes on to revoke the client's families. The
        # row it redeemed no longer matches once its transaction commits, and stays.
        return await self._db.execute(
            "DELETE FROM oauth_codes WHERE account_id = $1 AND client_id = $2 "
            "AND redeemed_at IS NULL",
            key,
            client_id,
        )

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._batches("oauth_codes", now)

    def _code(self, r: Row) -> AuthorizationCode:
        read = self._sql.read_time
        return AuthorizationCode(
            code_hash=r[0],
            client_id=r[1],
            account_id=str(r[2]),
            session_id=r[3],
            redirect_uri=r[4],
            scopes=self._sql.read_scopes(r[5]),
            nonce=r[6],
            code_challenge=r[7],
            auth_time=read(r[8]),
            created_at=read(r[9]),
            expires_at=read(r[10]),
            resources=self._sql.read_scopes(r[11]),
        )


# -- token families and refresh tokens ----------------------------------------------------

_FAMILY_COLUMNS = (
    "family_id, client_id, account_id, session_id, created_at, expires_at, revoked_at, resources"
)
REFRESH_COLUMNS = (
    "t.token_hash, t.family_id, t.client_id, t.account_id, t.session_id, t.scopes, "
    "t.auth_time, t.created_at, t.expires_at, t.replaced_at, f.revoked_at, f.resources"
)
"""A refresh token's columns as read (its family's revocation and resources with it)."""
_INSERT_FAMILY = insert("oauth_token_families", _FAMILY_COLUMNS)
_INSERT_REFRESH = insert(
    "oauth_refresh_tokens",
    "token_hash, family_id, client_id, account_id, session_id, scopes, auth_time, created_at, "
    "expires_at",
)
# The presented token marked replaced, only while it is current and its family live (the
# new token's owners must be its own); its row as REFRESH_COLUMNS reads it.
_REPLACE = """
    UPDATE oauth_refresh_tokens SET replaced_at = $3
    WHERE token_hash = $1 AND family_id = $2 AND client_id = $5 AND account_id = $6
        AND session_id = $7 AND replaced_at IS NULL AND expires_at > $3
        AND family_id IN (SELECT family_id FROM oauth_token_families WHERE revoked_at IS NULL)
    RETURNING token_hash, family_id, client_id, account_id, session_id, scopes, auth_time,
        created_at, expires_at, replaced_at, NULL,
        (SELECT f.resources FROM oauth_token_families AS f WHERE f.family_id = $2)
"""
# The same marking as one of a unit's waiting writes (``Db.write_required``: the unit fails,
# nothing written, unless it changed the row), its family's expiry and the new token waiting
# with it: the rotation then costs the unit no statement of its own.
_MARK_REPLACED = """
    UPDATE oauth_refresh_tokens AS t SET replaced_at = $3
    FROM oauth_token_families AS f
    WHERE t.token_hash = $1 AND f.family_id = t.family_id AND t.family_id = $2
        AND t.client_id = $4 AND t.account_id = $5 AND t.session_id = $6
        AND t.replaced_at IS NULL AND t.expires_at > $3 AND f.revoked_at IS NULL
"""
_SELECT_PRESENTED = (
    f"SELECT {REFRESH_COLUMNS}, EXISTS (SELECT 1 FROM sessions AS s "  # noqa: S608
    "WHERE s.id = t.session_id AND s.revoked_at IS NULL AND s.expires_at > $2) "
    "FROM oauth_refresh_tokens AS t "
    "JOIN oauth_token_families AS f ON f.family_id = t.family_id WHERE t.token_hash = $1"
)
_REVOKE_TOKEN = (
    insert("oauth_revoked_tokens", "token_id, client_id, expires_at, revoked_at")
    + " ON CONFLICT (token_id) DO NOTHING"
)


def _owners(token: RefreshToken) -> tuple[str, str, str, str]:
    return (token.family_id, token.client_id, token.account_id, token.session_id)


class SqlRefreshTokens(Purging):
    """:class:`~authgate.ports.openid.RefreshTokens`: a token's revocation is its
    family's row (one row to update however many tokens it has); a rotation is one statement
    where the engine has one (:attr:`~.engine.Dialect.rotate`). Starting a family and rotating
    trigger the purge of expired tokens and families."""

    _purged = "expired refresh tokens"

    async def start_family(self, family: TokenFamily, first: RefreshToken | None = None) -> None:
        sql = self._sql
        expires_at = family.expires_at
        if first is not None:
            expires_at = max(expires_at, first.expires_at)
        family_values = [
            family.family_id,
            family.client_id,
            _key(sql, family.account_id),
            family.session_id,
            sql.time(family.created_at),
            sql.time(expires_at),
            _opt_time(sql, family.revoked_at),
            sql.scopes(family.resources),
        ]
        if first is None:
            await self._db.write(_INSERT_FAMILY, *family_values)
        elif self._db.defers_writes:  # both wait: one statement at the end, still atomic
            await self._db.write(_INSERT_FAMILY, *family_values)
            await self._db.write(_INSERT_REFRESH, *self._token_values(first))
        else:
            async with self._db.atomic() as db:
                await db.execute(_INSERT_FAMILY, *family_values)
                await db.execute(_INSERT_REFRESH, *self._token_values(first))
        await self.written(family.created_at)

    async def rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        at = utc(now)
        old = await self._replace(presented_hash, new_token, self._sql.time(now))
        await self.written(now)
        if old is not None:
            return Rotated(
                self._token(old), attrs.evolve(new_token, replaced_at=None, revoked_at=None)
            )
        presented = await self.get(presented_hash)
        if presented is None:
            return None
        if _owners(presented) != _owners(new_token):
            raise ValueError("the new refresh token belongs to another family")
        # Replaced, revoked and expired never change back: what stopped the rotation holds.
        if at >= presented.expires_at or presented.replaced_at is None:
            return None  # expired, or current in a revoked family
        await self._db.execute(
            "UPDATE oauth_token_families SET revoked_at = $2 "
            "WHERE family_id = $1 AND revoked_at IS NULL",
            presented.family_id,
            self._sql.time(now),
        )
        return Reused(presented)

    async def replace(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime, stale: Exception
    ) -> bool:
        at = self._sql.time(now)
        if not self._db.defers_writes:
            replaced = await self._replace(presented_hash, new_token, at) is not None
        else:
            values = self._token_values(new_token)
            mark: list[object] = [presented_hash, values[1], at, *values[2:5]]
            replaced = await self._db.write_required(_MARK_REPLACED, mark, stale)
            await self._db.write(
                f"UPDATE oauth_token_families SET expires_at = {self._sql.greatest}"  # noqa: S608
                "(expires_at, $2) WHERE family_id = $1",
                new_token.family_id,
                values[-1],
            )
            await self._db.write(_INSERT_REFRESH, *values)
        await self.written(now)
        return replaced

    async def presented(
        self, token_hash: str, now: dt.datetime
    ) -> tuple[RefreshToken, bool] | None:
        row = await self._db.read_row(_SELECT_PRESENTED, token_hash, self._sql.time(now))
        return (self._token(row), bool(row[12])) if row is not None else None

    async def _replace(self, presented_hash: str, new: RefreshToken, at: object) -> Row | None:
        """The presented token replaced by ``new``, the family's expiry moved to the new
        token's; its row before, or None when it was not current in a live family."""
        values = self._token_values(new)
        args = (presented_hash, values[1], at, values[0], *values[2:])
        if self._sql.rotate is not None:
            return await self._db.fetchrow(self._sql.rotate, *args)
        async with self._db.atomic() as db:
            old = await db.fetchrow(_REPLACE, *args[:7])
            if old is not None:
                await db.execute(_INSERT_REFRESH, *values)
                await db.execute(
                    f"UPDATE oauth_token_families SET expires_at = {self._sql.greatest}"  # noqa: S608
                    "(expires_at, $2) WHERE family_id = $1",
                    new.family_id,
                    values[-1],
                )
            return old

    async def get(self, token_hash: str) -> RefreshToken | None:
        row = await self._db.read_row(
            f"SELECT {REFRESH_COLUMNS} FROM oauth_refresh_tokens AS t "  # noqa: S608
            "JOIN oauth_token_families AS f ON f.family_id = t.family_id "
            "WHERE t.token_hash = $1",
            token_hash,
        )
        return self._token(row) if row is not None else None

    async def is_family_live(self, family_id: str, now: dt.datetime) -> bool:
        row = await self._db.read_row(
            "SELECT true FROM oauth_token_families "
            "WHERE family_id = $1 AND revoked_at IS NULL AND expires_at > $2",
            family_id,
            self._sql.time(now),
        )
        return row is not None

    async def revoke_token(
        self, token_id: str, client_id: str, expires_at: dt.datetime, now: dt.datetime
    ) -> bool:
        if expires_at <= utc(now):
            return False
        sql = self._sql
        revoked = await self._db.execute(
            _REVOKE_TOKEN, token_id, client_id, sql.time(expires_at), sql.time(now)
        )
        await self.written(now)
        return revoked == 1

    async def is_token_revoked(self, token_id: str) -> bool:
        row = await self._db.read_row(
            "SELECT true FROM oauth_revoked_tokens WHERE token_id = $1", token_id
        )
        return row is not None

    async def _revoke(self, where: str, now: dt.datetime, *args: object) -> list[str]:
        found = await self._db.fetch(
            f"UPDATE oauth_token_families SET revoked_at = $1 WHERE {where} "  # noqa: S608
            "AND revoked_at IS NULL AND expires_at > $1 RETURNING family_id",
            self._sql.time(now),
            *args,
        )
        return [r[0] for r in found]

    async def revoke_family(self, family_id: str, now: dt.datetime) -> bool:
        return bool(await self._revoke("family_id = $2", now, family_id))

    async def revoke_for_session(self, session_id: str, now: dt.datetime) -> list[str]:
        return await self._revoke("session_id = $2", now, session_id)

    async def revoke_for_client(
        self, account_id: str, client_id: str, now: dt.datetime
    ) -> list[str]:
        key = self._sql.account_key(account_id)
        if key is None:
            return []
        return await self._revoke("account_id = $2 AND client_id = $3", now, key, client_id)

    async def revoke_for_account(self, account_id: str, now: dt.datetime) -> list[str]:
        key = self._sql.account_key(account_id)
        if key is None:
            return []
        return await self._revoke("account_id = $2", now, key)

    async def revoke_all_of_client(self, client_id: str, now: dt.datetime) -> list[str]:
        return await self._revoke("client_id = $2", now, client_id)

    async def for_account(self, account_id: str) -> list[TokenFamily]:
        return await self._of_account(
            account_id,
            f"SELECT {_FAMILY_COLUMNS} FROM oauth_token_families "  # noqa: S608
            "WHERE account_id = $1 ORDER BY created_at DESC, family_id DESC",
            self._family,
        )

    async def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        # The tokens first: a family's expiry covers its tokens', so the families then
        # deleted take no token along that was still to be counted.
        async for deleted in self._batches("oauth_refresh_tokens", now):
            yield deleted
        async for deleted in self._batches("oauth_token_families", now):
            yield deleted
        async for deleted in self._batches("oauth_revoked_tokens", now):
            yield deleted

    def _token_values(self, token: RefreshToken) -> list[object]:
        sql = self._sql
        return [
            token.token_hash,
            token.family_id,
            token.client_id,
            _key(sql, token.account_id),
            token.session_id,
            sql.scopes(token.scopes),
            sql.time(token.auth_time),
            sql.time(token.created_at),
            sql.time(token.expires_at),
        ]

    def _family(self, r: Row) -> TokenFamily:
        sql = self._sql
        return TokenFamily(
            family_id=r[0],
            client_id=r[1],
            account_id=str(r[2]),
            session_id=r[3],
            created_at=sql.read_time(r[4]),
            expires_at=sql.read_time(r[5]),
            revoked_at=_read_opt(sql, r[6]),
            resources=sql.read_scopes(r[7]),
        )

    def _token(self, r: Row) -> RefreshToken:
        sql = self._sql
        return RefreshToken(
            token_hash=r[0],
            family_id=r[1],
            client_id=r[2],
            account_id=str(r[3]),
            session_id=r[4],
            scopes=sql.read_scopes(r[5]),
            auth_time=sql.read_time(r[6]),
            created_at=sql.read_time(r[7]),
            expires_at=sql.read_time(r[8]),
            replaced_at=_read_opt(sql, r[9]),
            revoked_at=_read_opt(sql, r[10]),
            resources=sql.read_scopes(r[11]) if r[11] is not None else (),
        )


# -- grants ---------------------------------------------------------------------------------

GRANT_COLUMNS = "account_id, client_id, scopes, granted_at, last_used_at"
"""A grant's columns, in the order of a grant's statements' first five parameters."""
_SELECT_GRANT = (
    f"SELECT {GRANT_COLUMNS} FROM oauth_grants "  # noqa: S608 - constant columns
    "WHERE account_id = $1 AND client_id = $2"
)


class SqlGrants(Repository):
    """:class:`~authgate.ports.openid.Grants`: ``put`` is one upsert where the engine has one
    (:attr:`~.engine.Dialect.grant_put`), else one transaction under the engine's one writer."""

    async def get(self, account_id: str, client_id: str) -> Grant | None:
        key = self._sql.account_key(account_id)
        if key is None:
            return None
        row = await self._db.read_row(_SELECT_GRANT, key, client_id)
        return self._grant(row) if row is not None else None

    async def put(self, grant: Grant) -> Grant:
        if self._sql.grant_put is not None:
            row = await self._db.fetchrow(self._sql.grant_put, *self._args(grant))
            assert row is not None  # an upsert returns its row
            return self._grant(row)
        async with self._db.atomic() as db:
            return await self._merge(db, grant, await self._read(db, grant))

    async def consent(self, grant: Grant, seen: dt.datetime | None) -> Grant | None:
        sql = self._sql
        if sql.grant_consent_first is not None and sql.grant_consent_again is not None:
            if seen is None:
                row = await self._db.fetchrow(sql.grant_consent_first, *self._args(grant))
            else:
                row = await self._db.fetchrow(
                    sql.grant_consent_again, *self._args(grant), sql.time(seen)
                )
            return self._grant(row) if row is not None else None
        async with self._db.atomic() as db:
            kept = await self._read(db, grant)
            if (kept.granted_at if kept is not None else None) != seen:
                return None
            return await self._merge(db, grant, kept)

    async def _read(self, db: Db, grant: Grant) -> Grant | None:
        row = await db.fetchrow(_SELECT_GRANT, _key(self._sql, grant.account_id), grant.client_id)
        return self._grant(row) if row is not None else None

    async def _merge(self, db: Db, grant: Grant, kept: Grant | None) -> Grant:
        """``grant`` merged into ``kept`` (scopes widened, the later use kept), written."""
        if kept is not None:
            used = [t for t in (kept.last_used_at, grant.last_used_at) if t is not None]
            grant = attrs.evolve(
                grant, scopes=kept.scopes | grant.scopes, last_used_at=max(used) if used else None
            )
        await db.execute(
            insert("oauth_grants", GRANT_COLUMNS, "account_id, client_id"), *self._args(grant)
        )
        return grant

    async def touch(self, account_id: str, client_id: str, now: dt.datetime) -> None:
        key = self._sql.account_key(account_id)
        if key is None:
            return
        await self._db.write(
            "UPDATE oauth_grants SET last_used_at = $3 WHERE account_id = $1 "
            "AND client_id = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
            key,
            client_id,
            self._sql.time(now),
        )

    async def for_account(self, account_id: str) -> list[Grant]:
        return await self._of_account(
            account_id,
            f"SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE account_id = $1 ORDER BY client_id",  # noqa: S608
            self._grant,
        )

    async def remove(self, account_id: str, client_id: str) -> bool:
        key = self._sql.account_key(account_id)
        if key is None:
            return False
        removed = await self._db.execute(
            "DELETE FROM oauth_grants WHERE account_id = $1 AND client_id = $2", key, client_id
        )
        return removed == 1

    async def remove_all_of_client(self, client_id: str) -> int:
        return await self._db.execute("DELETE FROM oauth_grants WHERE client_id = $1", client_id)

    def _args(self, grant: Grant) -> tuple[object, ...]:
        """A grant as the statements' first five parameters, in :data:`GRANT_COLUMNS` order."""
        sql = self._sql
        return (
            _key(sql, grant.account_id),
            grant.client_id,
            sql.scopes(sorted(grant.scopes)),
            sql.time(grant.granted_at),
            _opt_time(sql, grant.last_used_at),
        )

    def _grant(self, r: Row) -> Grant:
        return Grant(
            account_id=str(r[0]),
            client_id=r[1],
            scopes=self._sql.read_scopes(r[2]),
            granted_at=self._sql.read_time(r[3]),
            last_used_at=_read_opt(self._sql, r[4]),
        )


# -- session clients ------------------------------------------------------------------------

SESSION_CLIENT_COLUMNS = "session_id, client_id, account_id, first_at, expires_at"
"""A session client's columns, in the order it is read back."""
_ADD_SESSION_CLIENT = (
    insert("oauth_session_clients", SESSION_CLIENT_COLUMNS)
    + " ON CONFLICT (session_id, client_id) DO NOTHING"
)
_SESSION_CLIENTS_OF = {
    column: f"SELECT {SESSION_CLIENT_COLUMNS} FROM oauth_session_clients "  # noqa: S608
    f"WHERE {column} = $1 ORDER BY first_at, session_id, client_id"
    for column in ("session_id", "account_id")
}


class SqlSessionClients(Purging):
    """:class:`~authgate.ports.openid.SessionClients`; ``add`` triggers the purge of
    the rows of sessions past their absolute expiry."""

    _purged = "ended session clients"

    async def add(self, client: SessionClient) -> None:
        sql = self._sql
        await self._db.write(
            _ADD_SESSION_CLIENT,
            client.session_id,
            client.client_id,
            _key(sql, client.account_id),
            sql.time(client.first_at),
            sql.time(client.expires_at),
        )
        await self.written(client.first_at)

    async def for_session(self, session_id: str) -> list[SessionClient]:
        found = await self._db.fetch(_SESSION_CLIENTS_OF["session_id"], session_id)
        return [self._client(r) for r in found]

    async def for_account(self, account_id: str) -> list[SessionClient]:
        return await self._of_account(account_id, _SESSION_CLIENTS_OF["account_id"], self._client)

    async def take_expired(self, now: dt.datetime, limit: int) -> list[SessionClient]:
        # Each is taken once: see the dialect's statement.
        found = await self._db.fetch(self._sql.take_expired, self._sql.time(now), limit)
        clients = [self._client(r) for r in found]
        return sorted(clients, key=lambda c: (c.first_at, c.session_id, c.client_id))

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return self._batches("oauth_session_clients", now)

    def _client(self, r: Row) -> SessionClient:
        return SessionClient(
            session_id=r[0],
            client_id=r[1],
            account_id=str(r[2]),
            first_at=self._sql.read_time(r[3]),
            expires_at=self._sql.read_time(r[4]),
        )
