"""Authorization codes, token families with their refresh tokens, grants and session clients
in PostgreSQL, shared by every instance (migration ``0008_openid_provider``).

Each repository works on the pool, or on one connection of a unit of work (``bound``); the
writes whose result nobody reads wait for the unit's other writes (:mod:`.unit`), so a token
response's unit costs the code's redemption and one combined write.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator

import asyncpg
import attrs

from authgate.domain.openid.records import (
    AuthorizationCode,
    Grant,
    RefreshToken,
    SessionClient,
    TokenFamily,
)
from authgate.ports.openid import AlreadyUsed, Redeemed, Reused, Rotated

from . import rows
from .housekeeping import Purging, delete_batches
from .unit import UnitConnection


def _key(account_id: str) -> uuid.UUID:
    """The account id as the tables hold it; ValueError for one that cannot be an account's."""
    key = rows.account_uuid(account_id)
    if key is None:
        raise ValueError("not an account id")
    return key


# -- authorization codes ------------------------------------------------------------------

_CODE_COLUMNS = (
    "code_hash, client_id, account_id, session_id, redirect_uri, scopes, nonce, "
    "code_challenge, auth_time, created_at, expires_at"
)


def _code(r: asyncpg.Record) -> AuthorizationCode:
    return AuthorizationCode(
        code_hash=r["code_hash"],
        client_id=r["client_id"],
        account_id=str(r["account_id"]),
        session_id=r["session_id"],
        redirect_uri=r["redirect_uri"],
        scopes=r["scopes"],
        nonce=r["nonce"],
        code_challenge=r["code_challenge"],
        auth_time=r["auth_time"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
    )


class PostgresAuthorizationCodes(Purging):
    """:class:`~authgate.ports.openid.AuthorizationCodes`: a redemption is one
    ``UPDATE … WHERE redeemed_at IS NULL``; of concurrent ones, the row lock lets the first
    through and the others find it redeemed once its transaction ends. ``add`` triggers the
    purge of expired codes."""

    _purged = "expired authorization codes"

    async def add(self, code: AuthorizationCode) -> None:
        await rows.write(
            self._db,
            f"INSERT INTO oauth_codes ({_CODE_COLUMNS}) "  # noqa: S608 - constant columns
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            code.code_hash,
            code.client_id,
            _key(code.account_id),
            code.session_id,
            code.redirect_uri,
            list(code.scopes),
            code.nonce,
            code.code_challenge,
            rows.utc(code.auth_time),
            rows.utc(code.created_at),
            rows.utc(code.expires_at),
        )
        self.written(code.created_at)

    async def redeem(self, code_hash: str, now: dt.datetime) -> Redeemed | AlreadyUsed | None:
        won = await self._db.fetchrow(
            "UPDATE oauth_codes SET redeemed_at = $2 "  # noqa: S608 - constant columns
            "WHERE code_hash = $1 AND redeemed_at IS NULL AND expires_at > $2 "
            f"RETURNING {_CODE_COLUMNS}",
            code_hash,
            rows.utc(now),
        )
        if won is not None:
            return Redeemed(_code(won))
        # A statement of its own: it sees what a concurrent redemption committed meanwhile
        # (READ COMMITTED), its family included.
        kept = await self._db.fetchrow(
            f"SELECT {_CODE_COLUMNS}, redeemed_at, family_id "  # noqa: S608 - constant columns
            "FROM oauth_codes WHERE code_hash = $1",
            code_hash,
        )
        if kept is None or kept["redeemed_at"] is None:
            return None
        return AlreadyUsed(_code(kept), kept["family_id"])

    async def record_issued(self, code_hash: str, family_id: str) -> None:
        await rows.write(
            self._db,
            "UPDATE oauth_codes SET family_id = $2 WHERE code_hash = $1",
            code_hash,
            family_id,
        )

    async def discard_outstanding(self, account_id: str, client_id: str) -> int:
        key = rows.account_uuid(account_id)
        if key is None:
            return 0
        # Sent now, not with the unit's waiting writes: a redemption holding a code's row
        # lock is waited for here, before the unit goes on to revoke the client's families.
        # The row it redeemed no longer matches once its transaction commits, and stays.
        status = await self._db.execute(
            "DELETE FROM oauth_codes WHERE account_id = $1 AND client_id = $2 "
            "AND redeemed_at IS NULL",
            key,
            client_id,
        )
        return rows.affected(status)

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._db, "oauth_codes", now)


# -- token families and refresh tokens ----------------------------------------------------

_FAMILY_COLUMNS = "family_id, client_id, account_id, session_id, created_at, expires_at, revoked_at"
_SELECT_FAMILIES = f"SELECT {_FAMILY_COLUMNS} FROM oauth_token_families "  # noqa: S608
_REFRESH_COLUMNS = (
    "t.token_hash, t.family_id, t.client_id, t.account_id, t.session_id, t.scopes, "
    "t.auth_time, t.created_at, t.expires_at, t.replaced_at, f.revoked_at"
)
_INSERT_FAMILY = (
    f"INSERT INTO oauth_token_families ({_FAMILY_COLUMNS}) "  # noqa: S608 - constant columns
    "VALUES ($1, $2, $3, $4, $5, $6, $7)"
)
_INSERT_REFRESH = (
    "INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, account_id, "
    "session_id, scopes, auth_time, created_at, expires_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
)

# One statement, atomic by itself: the presented token is marked replaced only while it is
# current and its family live, the family's expiry moves to the new token's, and the new token
# is inserted only when the first part matched (its rows feed the others). Of two concurrent
# rotations of one token, the second waits for the first's row lock, then finds the token
# replaced and matches nothing. A revocation of the family committing meanwhile leaves the new
# token dead all the same: a token is usable only while its family is.
_ROTATE = f"""
    WITH old AS (
        UPDATE oauth_refresh_tokens AS t SET replaced_at = $3
        FROM oauth_token_families AS f
        WHERE t.token_hash = $1 AND f.family_id = t.family_id
            AND t.family_id = $2 AND t.client_id = $5 AND t.account_id = $6
            AND t.session_id = $7
            AND t.replaced_at IS NULL AND t.expires_at > $3 AND f.revoked_at IS NULL
        RETURNING {_REFRESH_COLUMNS}
    ), family AS (
        UPDATE oauth_token_families SET expires_at = GREATEST(expires_at, $11)
        WHERE family_id IN (SELECT family_id FROM old)
    ), new AS (
        INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, account_id,
            session_id, scopes, auth_time, created_at, expires_at)
        SELECT $4::text, $2, $5, $6, $7, $8::text[], $9::timestamptz, $10::timestamptz, $11
        FROM old
    )
    SELECT * FROM old
"""  # noqa: S608 - constant columns


def _family(r: asyncpg.Record) -> TokenFamily:
    return TokenFamily(
        family_id=r["family_id"],
        client_id=r["client_id"],
        account_id=str(r["account_id"]),
        session_id=r["session_id"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
        revoked_at=r["revoked_at"],
    )


def _token(r: asyncpg.Record) -> RefreshToken:
    return RefreshToken(
        token_hash=r["token_hash"],
        family_id=r["family_id"],
        client_id=r["client_id"],
        account_id=str(r["account_id"]),
        session_id=r["session_id"],
        scopes=r["scopes"],
        auth_time=r["auth_time"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
        replaced_at=r["replaced_at"],
        revoked_at=r["revoked_at"],
    )


def _family_values(family: TokenFamily, expires_at: dt.datetime) -> list[object]:
    return [
        family.family_id,
        family.client_id,
        _key(family.account_id),
        family.session_id,
        rows.utc(family.created_at),
        rows.utc(expires_at),
        rows.utc(family.revoked_at) if family.revoked_at else None,
    ]


def _token_values(token: RefreshToken) -> list[object]:
    return [
        token.token_hash,
        token.family_id,
        token.client_id,
        _key(token.account_id),
        token.session_id,
        list(token.scopes),
        rows.utc(token.auth_time),
        rows.utc(token.created_at),
        rows.utc(token.expires_at),
    ]


def _owners(token: RefreshToken) -> tuple[str, str, str, str]:
    return (token.family_id, token.client_id, token.account_id, token.session_id)


class PostgresRefreshTokens(Purging):
    """:class:`~authgate.ports.openid.RefreshTokens`: a token's revocation is its
    family's row (one row to update however many tokens it has); a rotation is one statement
    on the happy path. Starting a family and rotating trigger the purge of expired tokens and
    families."""

    _purged = "expired refresh tokens"

    async def start_family(self, family: TokenFamily, first: RefreshToken | None = None) -> None:
        expires_at = family.expires_at
        if first is not None:
            expires_at = max(expires_at, first.expires_at)
        family_values = _family_values(family, expires_at)
        if first is None:
            await rows.write(self._db, _INSERT_FAMILY, *family_values)
        elif isinstance(self._db, UnitConnection):
            # Both wait for the unit's other writes: one statement at the end, still atomic.
            await self._db.write(_INSERT_FAMILY, *family_values)
            await self._db.write(_INSERT_REFRESH, *_token_values(first))
        else:
            async with rows.connection(self._db) as conn, rows.atomic(conn):
                await conn.execute(_INSERT_FAMILY, *family_values)
                await conn.execute(_INSERT_REFRESH, *_token_values(first))
        self.written(family.created_at)

    async def rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        at = rows.utc(now)
        values = _token_values(new_token)
        old = await self._db.fetchrow(
            _ROTATE, presented_hash, values[1], at, values[0], *values[2:]
        )
        self.written(now)
        if old is not None:
            return Rotated(_token(old), attrs.evolve(new_token, replaced_at=None, revoked_at=None))
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
            at,
        )
        return Reused(presented)

    async def get(self, token_hash: str) -> RefreshToken | None:
        row = await rows.read_row(
            self._db,
            f"SELECT {_REFRESH_COLUMNS} FROM oauth_refresh_tokens AS t "  # noqa: S608
            "JOIN oauth_token_families AS f ON f.family_id = t.family_id "
            "WHERE t.token_hash = $1",
            token_hash,
        )
        return _token(row) if row is not None else None

    async def is_family_live(self, family_id: str, now: dt.datetime) -> bool:
        row = await rows.read_row(
            self._db,
            "SELECT true FROM oauth_token_families "
            "WHERE family_id = $1 AND revoked_at IS NULL AND expires_at > $2",
            family_id,
            rows.utc(now),
        )
        return row is not None

    async def _revoke(self, where: str, now: dt.datetime, *args: object) -> list[str]:
        found = await self._db.fetch(
            f"UPDATE oauth_token_families SET revoked_at = $1 WHERE {where} "  # noqa: S608
            "AND revoked_at IS NULL AND expires_at > $1 RETURNING family_id",
            rows.utc(now),
            *args,
        )
        return [r["family_id"] for r in found]

    async def revoke_family(self, family_id: str, now: dt.datetime) -> bool:
        return bool(await self._revoke("family_id = $2", now, family_id))

    async def revoke_for_session(self, session_id: str, now: dt.datetime) -> list[str]:
        return await self._revoke("session_id = $2", now, session_id)

    async def revoke_for_client(
        self, account_id: str, client_id: str, now: dt.datetime
    ) -> list[str]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        return await self._revoke("account_id = $2 AND client_id = $3", now, key, client_id)

    async def revoke_for_account(self, account_id: str, now: dt.datetime) -> list[str]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        return await self._revoke("account_id = $2", now, key)

    async def for_account(self, account_id: str) -> list[TokenFamily]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        found = await self._db.fetch(
            _SELECT_FAMILIES + "WHERE account_id = $1 ORDER BY created_at DESC, family_id DESC",
            key,
        )
        return [_family(r) for r in found]

    async def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        # The tokens first: a family's expiry covers its tokens', so the families then
        # deleted take no token along that was still to be counted.
        async for deleted in delete_batches(self._db, "oauth_refresh_tokens", now):
            yield deleted
        async for deleted in delete_batches(self._db, "oauth_token_families", now):
            yield deleted


# -- grants ---------------------------------------------------------------------------------

_GRANT_COLUMNS = "account_id, client_id, scopes, granted_at, last_used_at"


def _grant_args(grant: Grant) -> tuple[object, ...]:
    """A grant as the statements' first five parameters, in :data:`_GRANT_COLUMNS` order."""
    return (
        _key(grant.account_id),
        grant.client_id,
        sorted(grant.scopes),
        rows.utc(grant.granted_at),
        rows.utc(grant.last_used_at) if grant.last_used_at else None,
    )


def _grant(r: asyncpg.Record) -> Grant:
    return Grant(
        account_id=str(r["account_id"]),
        client_id=r["client_id"],
        scopes=r["scopes"],
        granted_at=r["granted_at"],
        last_used_at=r["last_used_at"],
    )


class PostgresGrants(rows.Bindable):
    """:class:`~authgate.ports.openid.Grants`: ``put`` is one upsert that unions the
    scopes in the row it conflicts with."""

    async def get(self, account_id: str, client_id: str) -> Grant | None:
        key = rows.account_uuid(account_id)
        if key is None:
            return None
        row = await rows.read_row(
            self._db,
            f"SELECT {_GRANT_COLUMNS} FROM oauth_grants "  # noqa: S608 - constant columns
            "WHERE account_id = $1 AND client_id = $2",
            key,
            client_id,
        )
        return _grant(row) if row is not None else None

    async def put(self, grant: Grant) -> Grant:
        row = await self._db.fetchrow(
            f"""
            INSERT INTO oauth_grants ({_GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (account_id, client_id) DO UPDATE SET
                scopes = ARRAY(
                    SELECT DISTINCT s FROM unnest(oauth_grants.scopes || EXCLUDED.scopes) AS s
                    ORDER BY s
                ),
                granted_at = EXCLUDED.granted_at,
                last_used_at = GREATEST(oauth_grants.last_used_at, EXCLUDED.last_used_at)
            RETURNING {_GRANT_COLUMNS}
            """,  # noqa: S608 - constant columns
            *_grant_args(grant),
        )
        assert row is not None  # an upsert returns its row
        return _grant(row)

    async def consent(self, grant: Grant, seen: dt.datetime | None) -> Grant | None:
        if seen is None:
            row = await self._db.fetchrow(
                f"""
                INSERT INTO oauth_grants ({_GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (account_id, client_id) DO NOTHING
                RETURNING {_GRANT_COLUMNS}
                """,  # noqa: S608 - constant columns
                *_grant_args(grant),
            )
        else:
            row = await self._db.fetchrow(
                f"""
                UPDATE oauth_grants SET
                    scopes = ARRAY(
                        SELECT DISTINCT s FROM unnest(scopes || $3::text[]) AS s ORDER BY s
                    ),
                    granted_at = $4,
                    last_used_at = GREATEST(last_used_at, $5)
                WHERE account_id = $1 AND client_id = $2 AND granted_at = $6
                RETURNING {_GRANT_COLUMNS}
                """,  # noqa: S608 - constant columns
                *_grant_args(grant),
                rows.utc(seen),
            )
        return _grant(row) if row is not None else None

    async def touch(self, account_id: str, client_id: str, now: dt.datetime) -> None:
        key = rows.account_uuid(account_id)
        if key is None:
            return
        # GREATEST ignores NULL: a first use sets it.
        await rows.write(
            self._db,
            "UPDATE oauth_grants SET last_used_at = GREATEST(last_used_at, $3) "
            "WHERE account_id = $1 AND client_id = $2",
            key,
            client_id,
            rows.utc(now),
        )

    async def for_account(self, account_id: str) -> list[Grant]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        found = await self._db.fetch(
            f"SELECT {_GRANT_COLUMNS} FROM oauth_grants "  # noqa: S608 - constant columns
            "WHERE account_id = $1 ORDER BY client_id",
            key,
        )
        return [_grant(r) for r in found]

    async def remove(self, account_id: str, client_id: str) -> bool:
        key = rows.account_uuid(account_id)
        if key is None:
            return False
        status = await self._db.execute(
            "DELETE FROM oauth_grants WHERE account_id = $1 AND client_id = $2", key, client_id
        )
        return rows.affected(status) == 1


# -- session clients ------------------------------------------------------------------------

_SESSION_CLIENT_COLUMNS = "session_id, client_id, account_id, first_at, expires_at"


def _first_served(found: list[SessionClient]) -> list[SessionClient]:
    return sorted(found, key=lambda c: (c.first_at, c.session_id, c.client_id))


def _session_client(r: asyncpg.Record) -> SessionClient:
    return SessionClient(
        session_id=r["session_id"],
        client_id=r["client_id"],
        account_id=str(r["account_id"]),
        first_at=r["first_at"],
        expires_at=r["expires_at"],
    )


class PostgresSessionClients(Purging):
    """:class:`~authgate.ports.openid.SessionClients`; ``add`` triggers the purge of
    the rows of sessions past their absolute expiry."""

    _purged = "ended session clients"

    async def add(self, client: SessionClient) -> None:
        await rows.write(
            self._db,
            f"INSERT INTO oauth_session_clients ({_SESSION_CLIENT_COLUMNS}) "  # noqa: S608
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id, client_id) DO NOTHING",
            client.session_id,
            client.client_id,
            _key(client.account_id),
            rows.utc(client.first_at),
            rows.utc(client.expires_at),
        )
        self.written(client.first_at)

    async def for_session(self, session_id: str) -> list[SessionClient]:
        found = await self._db.fetch(
            f"SELECT {_SESSION_CLIENT_COLUMNS} FROM oauth_session_clients "  # noqa: S608
            "WHERE session_id = $1 ORDER BY first_at, session_id, client_id",
            session_id,
        )
        return [_session_client(r) for r in found]

    async def for_account(self, account_id: str) -> list[SessionClient]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        found = await self._db.fetch(
            f"SELECT {_SESSION_CLIENT_COLUMNS} FROM oauth_session_clients "  # noqa: S608
            "WHERE account_id = $1 ORDER BY first_at, session_id, client_id",
            key,
        )
        return [_session_client(r) for r in found]

    async def take_expired(self, now: dt.datetime, limit: int) -> list[SessionClient]:
        # The sessions' expiry index finds the candidates; the rows taken are locked and
        # skipped by a concurrent sweep (another instance), and a row another sweep deleted
        # first is simply not returned: each is taken once.
        found = await self._db.fetch(
            "WITH due AS (SELECT sc.session_id, sc.client_id FROM sessions AS s "
            "JOIN oauth_session_clients AS sc ON sc.session_id = s.id "
            "WHERE s.expires_at <= $1 AND s.revoked_at IS NULL "
            "ORDER BY s.expires_at LIMIT $2 FOR UPDATE OF sc SKIP LOCKED) "
            "DELETE FROM oauth_session_clients AS sc USING due "
            "WHERE sc.session_id = due.session_id AND sc.client_id = due.client_id "
            "RETURNING sc.session_id, sc.client_id, sc.account_id, sc.first_at, sc.expires_at",
            rows.utc(now),
            limit,
        )
        return _first_served([_session_client(r) for r in found])

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._db, "oauth_session_clients", now)
