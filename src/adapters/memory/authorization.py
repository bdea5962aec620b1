"""Authorization codes, refresh-token families, grants and session clients in memory (tests,
and a single instance)."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Iterable

import attrs

from authgate.domain.openid.records import (
    AuthorizationCode,
    Grant,
    RefreshToken,
    SessionClient,
    TokenFamily,
)
from authgate.ports.openid import AlreadyUsed, Redeemed, Reused, Rotated

from .journal import OneTable, Stored, Table
from .sessions import MemorySessionRecords


@attrs.frozen
class _Code:
    code: AuthorizationCode
    redeemed_at: dt.datetime | None = None
    family_id: str | None = None


class MemoryAuthorizationCodes(OneTable[str, _Code]):
    """:class:`~authgate.ports.openid.AuthorizationCodes` in a dict."""

    def drop_account(self, account_id: str) -> None:
        """The account was deleted: its codes go with it (a foreign key in SQL)."""
        self._rows.delete_if(lambda v: v.code.account_id == account_id)

    async def add(self, code: AuthorizationCode) -> None:
        if code.code_hash in self._rows:
            raise ValueError("an authorization code with this digest is kept already")
        self._rows[code.code_hash] = _Code(code)

    async def redeem(self, code_hash: str, now: dt.datetime) -> Redeemed | AlreadyUsed | None:
        row = self._rows.get(code_hash)
        if row is None:
            return None
        if row.redeemed_at is not None:
            return AlreadyUsed(row.code, row.family_id)
        if not row.code.live(now):
            return None
        self._rows[code_hash] = attrs.evolve(row, redeemed_at=now)
        return Redeemed(row.code)

    async def record_issued(self, code_hash: str, family_id: str) -> None:
        row = self._rows.get(code_hash)
        if row is not None:
            self._rows[code_hash] = attrs.evolve(row, family_id=family_id)

    async def discard_outstanding(self, account_id: str, client_id: str) -> int:
        return self._rows.delete_if(
            lambda v: (
                v.redeemed_at is None
                and v.code.account_id == account_id
                and v.code.client_id == client_id
            )
        )

    async def purge_expired(self, now: dt.datetime) -> int:
        return self._rows.delete_if(lambda v: v.code.expires_at <= now)


# A token's family, client, account and session; its family's own.
_owners = operator.attrgetter("family_id", "client_id", "account_id", "session_id")


class MemoryRefreshTokens(Stored):
    """:class:`~authgate.ports.openid.RefreshTokens` in three dicts. A token's
    ``revoked_at`` and ``resources`` are its family's, read when the token is; the revoked
    access tokens of clients' own are kept by ``jti`` with their expiry."""

    def __init__(self) -> None:
        self._families: Table[str, TokenFamily] = Table()
        self._tokens: Table[str, RefreshToken] = Table()
        self._revoked: Table[str, dt.datetime] = Table()
        self._sessions: MemorySessionRecords | None = None

    def snapshot(self) -> tuple[dict[str, TokenFamily], dict[str, RefreshToken]]:
        """The families and tokens held (immutable: shallow copies)."""
        return self._families.copy(), self._tokens.copy()

    def drop_account(self, account_id: str) -> None:
        """The account was deleted: its families and tokens go with it."""
        self._families.delete_if(lambda f: f.account_id == account_id)
        self._drop_orphans()

    def _drop_orphans(self) -> None:
        """Tokens whose family is gone go too."""
        self._tokens.delete_if(lambda t: t.family_id not in self._families)

    def _read(self, token: RefreshToken) -> RefreshToken:
        family = self._families[token.family_id]
        return attrs.evolve(token, revoked_at=family.revoked_at, resources=family.resources)

    async def start_family(self, family: TokenFamily, first: RefreshToken | None = None) -> None:
        if family.family_id in self._families:
            raise ValueError("a token family with this id exists already")
        if first is not None:
            if _owners(first) != _owners(family):
                raise ValueError("the first refresh token belongs to another family")
            if first.token_hash in self._tokens:
                raise ValueError("a refresh token with this digest is kept already")
            family = attrs.evolve(family, expires_at=max(family.expires_at, first.expires_at))
            self._tokens[first.token_hash] = attrs.evolve(
                first, replaced_at=None, revoked_at=None, resources=()
            )
        self._families[family.family_id] = family

    async def rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        token = self._tokens.get(presented_hash)
        if token is None:
            return None
        family = self._families[token.family_id]
        if _owners(new_token) != _owners(family):
            raise ValueError("the new refresh token belongs to another family")
        presented = self._read(token)
        if now >= token.expires_at:
            return None
        if token.replaced_at is not None:
            if family.revoked_at is None:
                self._families[family.family_id] = attrs.evolve(family, revoked_at=now)
            return Reused(presented)
        if family.revoked_at is not None:
            return None
        if new_token.token_hash in self._tokens:
            raise ValueError("a refresh token with this digest is kept already")
        current = attrs.evolve(new_token, replaced_at=None, revoked_at=None)
        self._tokens[presented_hash] = attrs.evolve(token, replaced_at=now)
        self._tokens[current.token_hash] = attrs.evolve(current, resources=())
        self._families[family.family_id] = attrs.evolve(
            family, expires_at=max(family.expires_at, current.expires_at)
        )
        return Rotated(attrs.evolve(presented, replaced_at=now), current)

    async def replace(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime, stale: Exception
    ) -> bool:
        token = self._tokens.get(presented_hash)
        if token is None or token.replaced_at is not None:
            return False  # nothing written: rotate() tells reuse from the rest
        return isinstance(await self.rotate(presented_hash, new_token, now), Rotated)

    def follow_sessions(self, sessions: MemorySessionRecords) -> None:
        """The session records :meth:`presented` asks (the unit of work joins them, as the
        SQL stores join their tables)."""
        self._sessions = sessions

    async def presented(
        self, token_hash: str, now: dt.datetime
    ) -> tuple[RefreshToken, bool] | None:
        token = await self.get(token_hash)
        if token is None:
            return None
        live = self._sessions is not None and await self._sessions.is_live(token.session_id, now)
        return token, live

    async def get(self, token_hash: str) -> RefreshToken | None:
        token = self._tokens.get(token_hash)
        return self._read(token) if token is not None else None

    async def is_family_live(self, family_id: str, now: dt.datetime) -> bool:
        family = self._families.get(family_id)
        return family is not None and family.live(now)

    def _revoke(self, now: dt.datetime, **owners: str) -> list[str]:
        """Revoke the live families whose attributes are ``owners``; their ids."""
        ids = [
            k
            for k, f in self._families.items()
            if f.live(now) and all(getattr(f, a) == v for a, v in owners.items())
        ]
        for family_id in ids:
            self._families[family_id] = attrs.evolve(self._families[family_id], revoked_at=now)
        return ids

    async def revoke_family(self, family_id: str, now: dt.datetime) -> bool:
        family = self._families.get(family_id)
        if family is None or not family.live(now):
            return False
        self._families[family_id] = attrs.evolve(family, revoked_at=now)
        return True

    async def revoke_token(
        self, token_id: str, client_id: str, expires_at: dt.datetime, now: dt.datetime
    ) -> bool:
        if token_id in self._revoked or expires_at <= now:
            return False
        self._revoked[token_id] = expires_at
        return True

    async def is_token_revoked(self, token_id: str) -> bool:
        return token_id in self._revoked

    async def revoke_for_session(self, session_id: str, now: dt.datetime) -> list[str]:
        return self._revoke(now, session_id=session_id)

    async def revoke_for_client(
        self, account_id: str, client_id: str, now: dt.datetime
    ) -> list[str]:
        return self._revoke(now, account_id=account_id, client_id=client_id)

    async def revoke_for_account(self, account_id: str, now: dt.datetime) -> list[str]:
        return self._revoke(now, account_id=account_id)

    async def revoke_all_of_client(self, client_id: str, now: dt.datetime) -> list[str]:
        return self._revoke(now, client_id=client_id)

    async def for_account(self, account_id: str) -> list[TokenFamily]:
        found = [f for f in self._families.values() if f.account_id == account_id]
        return sorted(found, key=lambda f: (f.created_at, f.family_id), reverse=True)

    async def purge_expired(self, now: dt.datetime) -> int:
        tokens = self._tokens.delete_if(lambda t: t.expires_at <= now)
        families = self._families.delete_if(lambda f: f.expires_at <= now)
        self._drop_orphans()
        revoked = self._revoked.delete_if(lambda expires_at: expires_at <= now)
        return tokens + families + revoked


class MemoryGrants(OneTable[tuple[str, str], Grant]):
    """:class:`~authgate.ports.openid.Grants` in a dict."""

    def drop_account(self, account_id: str) -> None:
        """The account was deleted: its grants go with it."""
        self._rows.delete_if(lambda g: g.account_id == account_id)

    async def get(self, account_id: str, client_id: str) -> Grant | None:
        return self._rows.get((account_id, client_id))

    async def put(self, grant: Grant) -> Grant:
        key = (grant.account_id, grant.client_id)
        kept = self._rows.get(key)
        if kept is not None:
            used = [t for t in (kept.last_used_at, grant.last_used_at) if t is not None]
            grant = attrs.evolve(
                grant,
                scopes=kept.scopes | grant.scopes,
                last_used_at=max(used) if used else None,
            )
        self._rows[key] = grant
        return grant

    async def consent(self, grant: Grant, seen: dt.datetime | None) -> Grant | None:
        kept = self._rows.get((grant.account_id, grant.client_id))
        if (kept.granted_at if kept is not None else None) != seen:
            return None
        return await self.put(grant)

    async def touch(self, account_id: str, client_id: str, now: dt.datetime) -> None:
        grant = self._rows.get((account_id, client_id))
        if grant is not None and (grant.last_used_at is None or grant.last_used_at < now):
            self._rows[(account_id, client_id)] = attrs.evolve(grant, last_used_at=now)

    async def for_account(self, account_id: str) -> list[Grant]:
        return [g for k, g in sorted(self._rows.items()) if k[0] == account_id]

    async def remove(self, account_id: str, client_id: str) -> bool:
        return self._rows.pop((account_id, client_id)) is not None

    async def remove_all_of_client(self, client_id: str) -> int:
        return self._rows.delete_if(lambda g: g.client_id == client_id)


class MemorySessionClients(OneTable[tuple[str, str], SessionClient]):
    """:class:`~authgate.ports.openid.SessionClients` in a dict."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: MemorySessionRecords | None = None

    def drop_account(self, account_id: str) -> None:
        """The account was deleted: its session clients go with it."""
        self._rows.delete_if(lambda c: c.account_id == account_id)

    async def add(self, client: SessionClient) -> None:
        self._rows.setdefault((client.session_id, client.client_id), client)

    async def for_session(self, session_id: str) -> list[SessionClient]:
        return _first_served(c for c in self._rows.values() if c.session_id == session_id)

    async def for_account(self, account_id: str) -> list[SessionClient]:
        return _first_served(c for c in self._rows.values() if c.account_id == account_id)

    def has_session(self, session_id: str) -> bool:
        """Whether a client of the session is recorded."""
        return any(sid == session_id for sid, _ in self._rows)

    def follow_sessions(self, sessions: MemorySessionRecords) -> None:
        """The session records whose expiry :meth:`take_expired` looks at (the unit of work
        joins them, as the SQL stores join their tables)."""
        self._sessions = sessions

    async def take_expired(self, now: dt.datetime, limit: int) -> list[SessionClient]:
        if self._sessions is None:
            return []
        due = []
        for key, served in self._rows.items():
            record = await self._sessions.get(served.session_id)
            if record is not None and record.revoked_at is None and record.expires_at <= now:
                due.append((record.expires_at, key))
        due.sort()
        taken = [self._rows[key] for _, key in due[:limit]]
        self._rows.delete_where(key for _, key in due[:limit])
        return _first_served(taken)

    async def purge_expired(self, now: dt.datetime) -> int:
        return self._rows.delete_if(lambda c: c.expires_at <= now)


def _first_served(clients: Iterable[SessionClient]) -> list[SessionClient]:
    return sorted(clients, key=lambda c: (c.first_at, c.session_id, c.client_id))
