"""The OpenID Provider's ports: what it keeps, the signatures of clients' assertions and the
clients' logout endpoints. Every method is atomic on its own; those of one unit of work commit
together. Deleting an account deletes its codes, families, tokens, grants and session clients."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from authgate.domain.openid.clients import Client
from authgate.domain.openid.logout import PendingLogout
from authgate.domain.openid.records import (
    AuthorizationCode,
    Grant,
    RefreshToken,
    SessionClient,
    TokenFamily,
)
from authgate.ports.outbox import Outbox


@attrs.frozen
class Redeemed:
    """The code's first redemption, within its lifetime: tokens may be issued."""

    code: AuthorizationCode


@attrs.frozen
class AlreadyUsed:
    """A replay: the caller revokes ``family_id``, what the first redemption recorded
    (RFC 6749 section 4.1.2), if any."""

    code: AuthorizationCode
    family_id: str | None


@attrs.frozen
class Rotated:
    """The presented refresh token was current: ``current`` replaces it in its family."""

    previous: RefreshToken
    current: RefreshToken


@attrs.frozen
class Reused:
    """The presented refresh token had been replaced already: someone holds a copy, and its
    family is now revoked (RFC 9700 section 4.14). ``presented`` is the token as it was."""

    presented: RefreshToken


class ClientSource(Protocol):
    """Clients known beyond the configuration file (dynamic registrations, client ID metadata
    documents), each found by its ``client_id``."""

    async def find(self, client_id: str) -> Client | None:
        """The client ``client_id`` names, or None when this source does not know it."""
        ...


class AuthorizationCodes(Protocol):
    """Authorization codes by their digest, each redeemed at most once, by any instance."""

    async def add(self, code: AuthorizationCode) -> None:
        """Keep a newly issued code (its digest is new)."""

    async def redeem(self, code_hash: str, now: dt.datetime) -> Redeemed | AlreadyUsed | None:
        """Take the code, atomically: the first call before it expires gets :class:`Redeemed`,
        every later one (concurrent ones included) :class:`AlreadyUsed`; None for an unknown
        code or one that expired unused. A concurrent call waits for the first one's
        transaction: redeem and :meth:`record_issued` in one unit of work, so that a replay
        learns the family."""

    async def record_issued(self, code_hash: str, family_id: str) -> None:
        """Remember that the code's redemption started ``family_id`` (a replay revokes it)."""

    async def discard_outstanding(self, account_id: str, client_id: str) -> int:
        """Drop the account's unredeemed codes of ``client_id`` (consent withdrawn); how many.
        Redeemed codes stay, so that a replay still revokes what they issued. A redemption
        under way is waited for (a row lock), so a later :meth:`RefreshTokens.revoke_for_client`
        in the unit of work revokes its family too."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop codes expired at ``now``, used or not; how many."""


class RefreshTokens(Protocol):
    """Refresh tokens by their digest, in families: revoking a family ends every token in it
    (one a concurrent rotation adds included) and every access token naming it."""

    async def start_family(self, family: TokenFamily, first: RefreshToken | None = None) -> None:
        """Keep a new family, with its first refresh token if any (which must match it; the
        family's expiry becomes the later of both)."""

    async def rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        """Exchange the presented token for ``new_token`` (of its family, else
        :class:`ValueError`), atomically. Current: it is marked replaced, ``new_token`` stored
        (the family's expiry moves to the new token's if later), :class:`Rotated`. Replaced
        already (not expired): the family is revoked, :class:`Reused`; of concurrent
        rotations of one token exactly one rotates, the others are reuse (a legitimate client
        never sends one token twice at once). Otherwise None, and nothing changes."""

    async def presented(
        self, token_hash: str, now: dt.datetime
    ) -> tuple[RefreshToken, bool] | None:
        """:meth:`get`, with whether the token's authgate session is live at ``now`` (as
        :meth:`~authgate.ports.session_records.SessionRecords.is_live` says), in one read."""

    async def replace(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime, stale: Exception
    ) -> bool:
        """:meth:`rotate`'s first half: the presented token marked replaced by ``new_token``
        (of its family) and ``new_token`` stored, only while the presented one is current in
        a live family; False when it is not, nothing written (:meth:`rotate` then tells reuse
        from the rest). A unit of work that sends its writes together may answer True and
        learn the outcome at its end: the unit then fails with ``stale``, nothing of it
        written. Of concurrent replacements of one token exactly one succeeds."""

    async def get(self, token_hash: str) -> RefreshToken | None:
        """The token, replaced or revoked ones included; None for an unknown digest."""

    async def is_family_live(self, family_id: str, now: dt.datetime) -> bool:
        """Whether the family exists, unrevoked and unexpired (one indexed read)."""

    async def revoke_family(self, family_id: str, now: dt.datetime) -> bool:
        """Revoke one family; False when it was not live."""

    async def revoke_token(
        self, token_id: str, client_id: str, expires_at: dt.datetime, now: dt.datetime
    ) -> bool:
        """Revoke one access token that has no family (a client's own), by its ``jti``, kept
        revoked until ``expires_at``; False when it was revoked already or has expired."""

    async def is_token_revoked(self, token_id: str) -> bool:
        """Whether the access token ``token_id`` (a ``jti``) was revoked (one indexed read)."""

    async def revoke_for_session(self, session_id: str, now: dt.datetime) -> list[str]:
        """Revoke every live family of the (ended) authgate session; their ids."""

    async def revoke_for_client(
        self, account_id: str, client_id: str, now: dt.datetime
    ) -> list[str]:
        """Revoke the account's live families of one client (consent withdrawn); their ids."""

    async def revoke_for_account(self, account_id: str, now: dt.datetime) -> list[str]:
        """Revoke every live family of the account; their ids."""

    async def revoke_all_of_client(self, client_id: str, now: dt.datetime) -> list[str]:
        """Revoke every live family of the client, whatever the account (the client was
        removed); their ids."""

    async def for_account(self, account_id: str) -> list[TokenFamily]:
        """Every family of the account, revoked and expired ones included, newest first."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop the refresh tokens, then the families, then the revoked access tokens, expired
        at ``now``; how many of all."""


class Grants(Protocol):
    """Consents, one per account and client."""

    async def get(self, account_id: str, client_id: str) -> Grant | None: ...

    async def put(self, grant: Grant) -> Grant:
        """Record consent, atomically, merged into an existing grant (the union of the scopes,
        the later ``last_used_at``); the grant as kept."""

    async def consent(self, grant: Grant, seen: dt.datetime | None) -> Grant | None:
        """:meth:`put` only while the grant is as the consent page found it (granted at
        ``seen``; None: no grant); None, nothing written, when it changed."""

    async def touch(self, account_id: str, client_id: str, now: dt.datetime) -> None:
        """Tokens were issued under the grant at ``now`` (``last_used_at`` never moves back)."""

    async def for_account(self, account_id: str) -> list[Grant]:
        """The account's grants, by client id."""

    async def remove(self, account_id: str, client_id: str) -> bool:
        """Withdraw the consent; False when there was none."""

    async def remove_all_of_client(self, client_id: str) -> int:
        """Remove every account's grant to the client (the client was removed); how many."""


class SessionClients(Protocol):
    """Which clients received tokens in which authgate session: told when it ends."""

    async def add(self, client: SessionClient) -> None:
        """Remember the client in the session; idempotent (the first ``first_at`` stays)."""

    async def for_session(self, session_id: str) -> list[SessionClient]:
        """The session's clients, first served first."""

    async def for_account(self, account_id: str) -> list[SessionClient]:
        """The account's session clients, first served first."""

    async def take_expired(self, now: dt.datetime, limit: int) -> list[SessionClient]:
        """Remove and return (at most ``limit``, oldest first, each once across instances) the
        rows of sessions that expired unrevoked (a revoked session's clients were told); the
        session's record is kept while such rows remain."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop rows whose session ended at ``now`` at the latest; how many."""


class AssertionRejected(Exception):
    """The assertion is not a JWS signed by a key of the client; the text is safe to log."""


class ClientKeysUnavailable(Exception):
    """The client's key set cannot be fetched right now; the text is safe to log."""


class ClientAssertionSignatures(Protocol):
    async def verified_claims(self, client: Client, assertion: str) -> Mapping[str, Any]:
        """The (unchecked) claims of ``assertion`` once it verifies with a key of ``client``
        and one of the :data:`~authgate.domain.openid.clients.ASSERTION_ALGORITHMS`."""


class LogoutOutbox(Outbox[PendingLogout], Protocol):
    """Pending back-channel logouts, written with the change that ends the session."""


class LogoutDeliveryFailed(Exception):
    """The client did not confirm the logout (no 2xx); the text never holds the token."""


class LogoutTokenSender(Protocol):
    """The clients' back-channel logout endpoints."""

    async def send(self, uri: str, logout_token: str) -> None:
        """POST ``logout_token`` to ``uri`` as a form field; :class:`LogoutDeliveryFailed`
        unless 2xx."""
