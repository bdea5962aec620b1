"""Authorization codes, token families with their refresh tokens, grants and session clients
in SQLite (schema version 8). A change of several statements runs in one transaction
(``BEGIN IMMEDIATE``: SQLite's one writer at a time, across processes on the file), so a
redemption or a rotation is decided once. Scopes are stored space-separated."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import attrs

from authgate.domain.openid.records import (
    AuthorizationCode,
    Grant,
    RefreshToken,
    SessionClient,
    TokenFamily,
)
from authgate.ports.openid import AlreadyUsed, Redeemed, Reused, Rotated

from .db import Database, parse_opt_ts, parse_ts, ts
from .housekeeping import Purging, delete_batches


def _scopes(text: str) -> list[str]:
    return text.split()


def _opt_ts(value: dt.datetime | None) -> str | None:
    return ts(value) if value is not None else None


# -- authorization codes ------------------------------------------------------------------

_CODE_COLUMNS = (
    "code_hash, client_id, account_id, session_id, redirect_uri, scopes, nonce, "
    "code_challenge, auth_time, created_at, expires_at"
)


def _code(r: Sequence[Any]) -> AuthorizationCode:
    return AuthorizationCode(
        code_hash=r[0],
        client_id=r[1],
        account_id=r[2],
        session_id=r[3],
        redirect_uri=r[4],
        scopes=_scopes(r[5]),
        nonce=r[6],
        code_challenge=r[7],
        auth_time=parse_ts(r[8]),
        created_at=parse_ts(r[9]),
        expires_at=parse_ts(r[10]),
    )


class SqliteAuthorizationCodes(Purging):
    """:class:`~authgate.ports.openid.AuthorizationCodes` in a SQLite file; ``add``
    purges expired codes at most once per ``purge_interval``."""

    _purged = "expired authorization codes"

    async def add(self, code: AuthorizationCode) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                f"INSERT INTO oauth_codes ({_CODE_COLUMNS}) "  # noqa: S608 - constant columns
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    code.code_hash,
                    code.client_id,
                    code.account_id,
                    code.session_id,
                    code.redirect_uri,
                    " ".join(code.scopes),
                    code.nonce,
                    code.code_challenge,
                    ts(code.auth_time),
                    ts(code.created_at),
                    ts(code.expires_at),
                ),
            )
        await self.housekeeping.maybe_run(lambda: self.purge_expired(code.created_at))

    async def redeem(self, code_hash: str, now: dt.datetime) -> Redeemed | AlreadyUsed | None:
        async with self._db.transaction() as conn:
            won = list(
                await conn.execute_fetchall(
                    "UPDATE oauth_codes SET redeemed_at = ?1 "  # noqa: S608 - constant columns
                    "WHERE code_hash = ?2 AND redeemed_at IS NULL AND expires_at > ?1 "
                    f"RETURNING {_CODE_COLUMNS}",
                    (ts(now), code_hash),
                )
            )
            if won:
                return Redeemed(_code(won[0]))
            kept = list(
                await conn.execute_fetchall(
                    f"SELECT {_CODE_COLUMNS}, redeemed_at, family_id "  # noqa: S608
                    "FROM oauth_codes WHERE code_hash = ?",
                    (code_hash,),
                )
            )
        if not kept or kept[0][11] is None:
            return None
        return AlreadyUsed(_code(kept[0]), kept[0][12])

    async def record_issued(self, code_hash: str, family_id: str) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                "UPDATE oauth_codes SET family_id = ? WHERE code_hash = ?", (family_id, code_hash)
            )

    async def discard_outstanding(self, account_id: str, client_id: str) -> int:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "DELETE FROM oauth_codes WHERE account_id = ? AND client_id = ? "
                "AND redeemed_at IS NULL",
                (account_id, client_id),
            )
            return cursor.rowcount

    async def purge_expired(self, now: dt.datetime) -> int:
        return await delete_batches(self._db, "oauth_codes", now)


# -- token families and refresh tokens ----------------------------------------------------

_FAMILY_COLUMNS = "family_id, client_id, account_id, session_id, created_at, expires_at, revoked_at"
_SELECT_REFRESH = (
    "SELECT t.token_hash, t.family_id, t.client_id, t.account_id, t.session_id, t.scopes, "
    "t.auth_time, t.created_at, t.expires_at, t.replaced_at, f.revoked_at "
    "FROM oauth_refresh_tokens AS t JOIN oauth_token_families AS f "
    "ON f.family_id = t.family_id WHERE t.token_hash = ?"
)
_INSERT_REFRESH = (
    "INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, account_id, "
    "session_id, scopes, auth_time, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _family(r: Sequence[Any]) -> TokenFamily:
    return TokenFamily(
        family_id=r[0],
        client_id=r[1],
        account_id=r[2],
        session_id=r[3],
        created_at=parse_ts(r[4]),
        expires_at=parse_ts(r[5]),
        revoked_at=parse_opt_ts(r[6]),
    )


def _token(r: Sequence[Any]) -> RefreshToken:
    return RefreshToken(
        token_hash=r[0],
        family_id=r[1],
        client_id=r[2],
        account_id=r[3],
        session_id=r[4],
        scopes=_scopes(r[5]),
        auth_time=parse_ts(r[6]),
        created_at=parse_ts(r[7]),
        expires_at=parse_ts(r[8]),
        replaced_at=parse_opt_ts(r[9]),
        revoked_at=parse_opt_ts(r[10]),
    )


def _token_values(token: RefreshToken) -> tuple[object, ...]:
    return (
        token.token_hash,
        token.family_id,
        token.client_id,
        token.account_id,
        token.session_id,
        " ".join(token.scopes),
        ts(token.auth_time),
        ts(token.created_at),
        ts(token.expires_at),
    )


def _owners(token: RefreshToken) -> tuple[str, str, str, str]:
    return (token.family_id, token.client_id, token.account_id, token.session_id)


class SqliteRefreshTokens(Purging):
    """:class:`~authgate.ports.openid.RefreshTokens` in a SQLite file: a token's
    revocation is its family's row. Starting a family and rotating purge expired tokens and
    families at most once per ``purge_interval``."""

    _purged = "expired refresh tokens"

    async def start_family(self, family: TokenFamily, first: RefreshToken | None = None) -> None:
        expires_at = family.expires_at
        if first is not None:
            expires_at = max(expires_at, first.expires_at)
        async with self._db.transaction() as conn:
            await conn.execute(
                f"INSERT INTO oauth_token_families ({_FAMILY_COLUMNS}) "  # noqa: S608
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    family.family_id,
                    family.client_id,
                    family.account_id,
                    family.session_id,
                    ts(family.created_at),
                    ts(expires_at),
                    _opt_ts(family.revoked_at),
                ),
            )
            if first is not None:
                await conn.execute(_INSERT_REFRESH, _token_values(first))
        await self.housekeeping.maybe_run(lambda: self.purge_expired(family.created_at))

    async def rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        result = await self._rotate(presented_hash, new_token, now)
        await self.housekeeping.maybe_run(lambda: self.purge_expired(now))
        return result

    async def _rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        async with self._db.transaction() as conn:
            found = list(await conn.execute_fetchall(_SELECT_REFRESH, (presented_hash,)))
            if not found:
                return None
            presented = _token(found[0])
            if _owners(presented) != _owners(new_token):
                raise ValueError("the new refresh token belongs to another family")
            if now >= presented.expires_at:
                return None
            if presented.replaced_at is not None:
                await conn.execute(
                    "UPDATE oauth_token_families SET revoked_at = ? "
                    "WHERE family_id = ? AND revoked_at IS NULL",
                    (ts(now), presented.family_id),
                )
                return Reused(presented)
            if presented.revoked_at is not None:
                return None
            await conn.execute(
                "UPDATE oauth_refresh_tokens SET replaced_at = ? WHERE token_hash = ?",
                (ts(now), presented_hash),
            )
            await conn.execute(_INSERT_REFRESH, _token_values(new_token))
            await conn.execute(
                "UPDATE oauth_token_families SET expires_at = MAX(expires_at, ?) "
                "WHERE family_id = ?",
                (ts(new_token.expires_at), presented.family_id),
            )
        return Rotated(
            attrs.evolve(presented, replaced_at=now),
            attrs.evolve(new_token, replaced_at=None, revoked_at=None),
        )

    async def get(self, token_hash: str) -> RefreshToken | None:
        async with self._db.use() as conn:
            found = list(await conn.execute_fetchall(_SELECT_REFRESH, (token_hash,)))
        return _token(found[0]) if found else None

    async def is_family_live(self, family_id: str, now: dt.datetime) -> bool:
        async with self._db.use() as conn:
            found = list(
                await conn.execute_fetchall(
                    "SELECT 1 FROM oauth_token_families "
                    "WHERE family_id = ? AND revoked_at IS NULL AND expires_at > ?",
                    (family_id, ts(now)),
                )
            )
        return bool(found)

    async def _revoke(self, where: str, now: dt.datetime, *args: object) -> list[str]:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"UPDATE oauth_token_families SET revoked_at = ?1 WHERE {where} "  # noqa: S608
                "AND revoked_at IS NULL AND expires_at > ?1 RETURNING family_id",
                (ts(now), *args),
            )
        return [r[0] for r in found]

    async def revoke_family(self, family_id: str, now: dt.datetime) -> bool:
        return bool(await self._revoke("family_id = ?2", now, family_id))

    async def revoke_for_session(self, session_id: str, now: dt.datetime) -> list[str]:
        return await self._revoke("session_id = ?2", now, session_id)

    async def revoke_for_client(
        self, account_id: str, client_id: str, now: dt.datetime
    ) -> list[str]:
        return await self._revoke("account_id = ?2 AND client_id = ?3", now, account_id, client_id)

    async def revoke_for_account(self, account_id: str, now: dt.datetime) -> list[str]:
        return await self._revoke("account_id = ?2", now, account_id)

    async def for_account(self, account_id: str) -> list[TokenFamily]:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"SELECT {_FAMILY_COLUMNS} FROM oauth_token_families "  # noqa: S608
                "WHERE account_id = ? ORDER BY created_at DESC, family_id DESC",
                (account_id,),
            )
        return [_family(r) for r in found]

    async def purge_expired(self, now: dt.datetime) -> int:
        # The tokens first: a family's expiry covers its tokens', so the families then
        # deleted take no token along that was still to be counted.
        tokens = await delete_batches(self._db, "oauth_refresh_tokens", now)
        return tokens + await delete_batches(self._db, "oauth_token_families", now)


# -- grants ---------------------------------------------------------------------------------

_GRANT_COLUMNS = "account_id, client_id, scopes, granted_at, last_used_at"


def _grant(r: Sequence[Any]) -> Grant:
    return Grant(
        account_id=r[0],
        client_id=r[1],
        scopes=_scopes(r[2]),
        granted_at=parse_ts(r[3]),
        last_used_at=parse_opt_ts(r[4]),
    )


class SqliteGrants:
    """:class:`~authgate.ports.openid.Grants` in a SQLite file; ``put`` reads and
    writes in one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, account_id: str, client_id: str) -> Grant | None:
        async with self._db.use() as conn:
            found = list(
                await conn.execute_fetchall(
                    f"SELECT {_GRANT_COLUMNS} FROM oauth_grants "  # noqa: S608
                    "WHERE account_id = ? AND client_id = ?",
                    (account_id, client_id),
                )
            )
        return _grant(found[0]) if found else None

    async def put(self, grant: Grant) -> Grant:
        async with self._db.transaction() as conn:
            return await self._write(conn, grant, await self._read(conn, grant))

    async def consent(self, grant: Grant, seen: dt.datetime | None) -> Grant | None:
        async with self._db.transaction() as conn:
            kept = await self._read(conn, grant)
            if (kept.granted_at if kept is not None else None) != seen:
                return None
            return await self._write(conn, grant, kept)

    @staticmethod
    async def _read(conn: Any, grant: Grant) -> Grant | None:
        found = list(
            await conn.execute_fetchall(
                f"SELECT {_GRANT_COLUMNS} FROM oauth_grants "  # noqa: S608
                "WHERE account_id = ? AND client_id = ?",
                (grant.account_id, grant.client_id),
            )
        )
        return _grant(found[0]) if found else None

    @staticmethod
    async def _write(conn: Any, grant: Grant, kept: Grant | None) -> Grant:
        """``grant`` merged into ``kept`` (scopes widened, the later use kept), written."""
        if kept is not None:
            used = [t for t in (kept.last_used_at, grant.last_used_at) if t is not None]
            grant = attrs.evolve(
                grant,
                scopes=kept.scopes | grant.scopes,
                last_used_at=max(used) if used else None,
            )
        await conn.execute(
            f"INSERT OR REPLACE INTO oauth_grants ({_GRANT_COLUMNS}) "  # noqa: S608
            "VALUES (?, ?, ?, ?, ?)",
            (
                grant.account_id,
                grant.client_id,
                " ".join(sorted(grant.scopes)),
                ts(grant.granted_at),
                _opt_ts(grant.last_used_at),
            ),
        )
        return grant

    async def touch(self, account_id: str, client_id: str, now: dt.datetime) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                "UPDATE oauth_grants SET last_used_at = ?1 WHERE account_id = ?2 "
                "AND client_id = ?3 AND (last_used_at IS NULL OR last_used_at < ?1)",
                (ts(now), account_id, client_id),
            )

    async def for_account(self, account_id: str) -> list[Grant]:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"SELECT {_GRANT_COLUMNS} FROM oauth_grants "  # noqa: S608
                "WHERE account_id = ? ORDER BY client_id",
                (account_id,),
            )
        return [_grant(r) for r in found]

    async def remove(self, account_id: str, client_id: str) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "DELETE FROM oauth_grants WHERE account_id = ? AND client_id = ?",
                (account_id, client_id),
            )
            return cursor.rowcount == 1


# -- session clients ------------------------------------------------------------------------

_SESSION_CLIENT_COLUMNS = "session_id, client_id, account_id, first_at, expires_at"


def _session_client(r: Sequence[Any]) -> SessionClient:
    return SessionClient(
        session_id=r[0],
        client_id=r[1],
        account_id=r[2],
        first_at=parse_ts(r[3]),
        expires_at=parse_ts(r[4]),
    )


class SqliteSessionClients(Purging):
    """:class:`~authgate.ports.openid.SessionClients` in a SQLite file; ``add`` purges
    the rows of sessions past their absolute expiry at most once per ``purge_interval``."""

    _purged = "ended session clients"

    async def add(self, client: SessionClient) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                f"INSERT INTO oauth_session_clients ({_SESSION_CLIENT_COLUMNS}) "  # noqa: S608
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id, client_id) DO NOTHING",
                (
                    client.session_id,
                    client.client_id,
                    client.account_id,
                    ts(client.first_at),
                    ts(client.expires_at),
                ),
            )
        await self.housekeeping.maybe_run(lambda: self.purge_expired(client.first_at))

    async def _select(self, where: str, value: str) -> list[SessionClient]:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"SELECT {_SESSION_CLIENT_COLUMNS} FROM oauth_session_clients "  # noqa: S608
                f"WHERE {where} = ? ORDER BY first_at, session_id, client_id",
                (value,),
            )
        return [_session_client(r) for r in found]

    async def for_session(self, session_id: str) -> list[SessionClient]:
        return await self._select("session_id", session_id)

    async def for_account(self, account_id: str) -> list[SessionClient]:
        return await self._select("account_id", account_id)

    async def take_expired(self, now: dt.datetime, limit: int) -> list[SessionClient]:
        # In one statement (a write: under the file's write lock, so taken once).
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                "DELETE FROM oauth_session_clients WHERE rowid IN (SELECT sc.rowid "  # noqa: S608
                "FROM sessions AS s JOIN oauth_session_clients AS sc ON sc.session_id = s.id "
                "WHERE s.expires_at <= ? AND s.revoked_at IS NULL ORDER BY s.expires_at "
                f"LIMIT ?) RETURNING {_SESSION_CLIENT_COLUMNS}",
                (ts(now), limit),
            )
        clients = [_session_client(r) for r in found]
        return sorted(clients, key=lambda c: (c.first_at, c.session_id, c.client_id))

    async def purge_expired(self, now: dt.datetime) -> int:
        return await delete_batches(self._db, "oauth_session_clients", now)
