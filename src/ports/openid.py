"""The OpenID Provider's ports: what it keeps (codes, token families, grants, session clients,
the back-channel logout outbox), the signatures of clients' assertions and the clients' logout
endpoints.

Every method is atomic on its own; the methods of one unit of work
(:mod:`authgate.ports.unit_of_work`) commit together, so a token response's writes all happen or
none does. Deleting an account deletes its codes, families, tokens, grants and session clients.
"""

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
    """The code's first redemption, within its lifetime: the caller may issue tokens for it."""

    code: AuthorizationCode


@attrs.frozen
class AlreadyUsed:
    """The code was redeemed before: a replay. The caller revokes ``family_id``, what the
    first redemption recorded (RFC 6749 section 4.1.2), if any."""

    code: AuthorizationCode
    family_id: str | None


@attrs.frozen
class Rotated:
    """The presented refresh token was current: ``current`` replaces it in its family."""

    previous: RefreshToken
    current: RefreshToken


@attrs.frozen
class Reused:
    """The presented refresh token had been replaced already: someone holds a copy. Its whole
    family is now revoked (RFC 9700 section 4.14); ``presented`` is the token as it was
    (``revoked_at`` set when the family had been revoked before)."""

    presented: RefreshToken


class AuthorizationCodes(Protocol):
    """Authorization codes by their digest, each redeemed at most once, by any instance."""

    async def add(self, code: AuthorizationCode) -> None:
        """Keep a newly issued code (its digest is new)."""
        ...

    async def redeem(self, code_hash: str, now: dt.datetime) -> Redeemed | AlreadyUsed | None:
        """Take the code, atomically, once: the first call before it expires gets
        :class:`Redeemed`; every later call, concurrent ones included, :class:`AlreadyUsed`
        (while the code is kept). None for an unknown code, or one that expired unused.

        A concurrent call waits for the first one's transaction, so redeem and
        :meth:`record_issued` in one unit of work: the replay then learns the family."""
        ...

    async def record_issued(self, code_hash: str, family_id: str) -> None:
        """Remember that the code's redemption started ``family_id`` (a replay revokes it)."""
        ...

    async def discard_outstanding(self, account_id: str, client_id: str) -> int:
        """Drop the account's unredeemed codes of ``client_id`` (consent withdrawn); how many.
        Redeemed codes stay, so that a replay still revokes what they issued.

        A redemption under way is waited for (the SQL stores' row lock): its family is then
        committed before this returns, so a :meth:`RefreshTokens.revoke_for_client` after it in
        the same unit of work revokes that family too."""
        ...

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop codes expired at ``now``, used or not; how many."""
        ...


class RefreshTokens(Protocol):
    """Refresh tokens by their digest, in families
    (:class:`~authgate.domain.openid.records.TokenFamily`): revoking a family ends every token
    in it, one a concurrent rotation adds included, and every access token naming it."""

    async def start_family(self, family: TokenFamily, first: RefreshToken | None = None) -> None:
        """Keep a new family, with its first refresh token when one is issued (``first``
        must match the family, or it is refused; the family's expiry becomes the later of the
        two). A family without refresh tokens still stands for its access tokens."""
        ...

    async def rotate(
        self, presented_hash: str, new_token: RefreshToken, now: dt.datetime
    ) -> Rotated | Reused | None:
        """Exchange the presented token for ``new_token``, atomically:

        * current (not replaced, family not revoked, not expired): it is marked replaced at
          ``now`` and ``new_token`` stored in its family (whose expiry moves to the new
          token's if later): :class:`Rotated`;
        * replaced already (and not expired): the family is revoked at ``now`` unless it
          was before: :class:`Reused`, at every such presentation. Of concurrent rotations
          of one token exactly one rotates; the others are reuse, so the family ends (a
          legitimate client never sends one token twice at once);
        * unknown, expired, or current in a revoked family: None, and nothing changes.

        ``new_token`` must belong to the presented token's family: :class:`ValueError`
        otherwise, and nothing changes."""
        ...

    async def get(self, token_hash: str) -> RefreshToken | None:
        """The token, replaced or revoked ones included; None for an unknown digest."""
        ...

    async def is_family_live(self, family_id: str, now: dt.datetime) -> bool:
        """Whether the family exists, is not revoked and has not expired (one indexed read)."""
        ...

    async def revoke_family(self, family_id: str, now: dt.datetime) -> bool:
        """Revoke one family; False when it was not live."""
        ...

    async def revoke_for_session(self, session_id: str, now: dt.datetime) -> list[str]:
        """Revoke every live family issued in the authgate session (it ended); their ids."""
        ...

    async def revoke_for_client(
        self, account_id: str, client_id: str, now: dt.datetime
    ) -> list[str]:
        """Revoke the account's live families of one client (consent withdrawn); their ids."""
        ...

    async def revoke_for_account(self, account_id: str, now: dt.datetime) -> list[str]:
        """Revoke every live family of the account; their ids."""
        ...

    async def for_account(self, account_id: str) -> list[TokenFamily]:
        """Every family of the account, revoked and expired ones included, newest first."""
        ...

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop refresh tokens expired at ``now`` (replaced or not), then families expired at
        ``now`` (revoked or not; none of their tokens outlives them); how many of both."""
        ...


class Grants(Protocol):
    """Consents, one per account and client."""

    async def get(self, account_id: str, client_id: str) -> Grant | None: ...

    async def put(self, grant: Grant) -> Grant:
        """Record consent, atomically; for an existing grant the scopes become the union of
        both (consent only widens), ``last_used_at`` the later of both. The grant as kept."""
        ...

    async def consent(self, grant: Grant, seen: dt.datetime | None) -> Grant | None:
        """:meth:`put`, only while the grant is as the consent page found it (granted at
        ``seen``; None: no grant): a compare-and-set. None, nothing written, when it changed."""
        ...

    async def touch(self, account_id: str, client_id: str, now: dt.datetime) -> None:
        """Tokens were issued under the grant at ``now`` (``last_used_at`` never moves back);
        nothing without a grant."""
        ...

    async def for_account(self, account_id: str) -> list[Grant]:
        """The account's grants, by client id."""
        ...

    async def remove(self, account_id: str, client_id: str) -> bool:
        """Withdraw the consent; False when there was none."""
        ...


class SessionClients(Protocol):
    """Which clients received tokens in which authgate session: who is told (back-channel
    logout) when the session ends."""

    async def add(self, client: SessionClient) -> None:
        """Remember the client in the session; idempotent (the first ``first_at`` stays)."""
        ...

    async def for_session(self, session_id: str) -> list[SessionClient]:
        """The session's clients, first served first."""
        ...

    async def for_account(self, account_id: str) -> list[SessionClient]:
        """The account's session clients, first served first."""
        ...

    async def take_expired(self, now: dt.datetime, limit: int) -> list[SessionClient]:
        """Remove and return (at most ``limit``, oldest first) the rows of sessions that
        ended by expiring, not revoked (a revoked session's clients were told). Each row is
        taken once across instances; the session's record is kept while such rows remain."""
        ...

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop rows whose session ended at ``now`` at the latest; how many."""
        ...


class AssertionRejected(Exception):
    """The assertion is not a JWS signed by a key of the client; the text is safe to log."""


class ClientKeysUnavailable(Exception):
    """The client's key set cannot be fetched right now; the text is safe to log."""


class ClientAssertionSignatures(Protocol):
    async def verified_claims(self, client: Client, assertion: str) -> Mapping[str, Any]:
        """The claims of ``assertion`` (unchecked) once its signature verifies with a key of
        ``client`` and one of :data:`~authgate.domain.openid.clients.ASSERTION_ALGORITHMS`."""
        ...


class LogoutOutbox(Outbox[PendingLogout], Protocol):
    """Pending back-channel logouts, written in the transaction that ends the session and
    delivered after commit, at least once."""


class LogoutDeliveryFailed(Exception):
    """The client did not confirm the logout (no 2xx); the text never holds the token."""


class LogoutTokenSender(Protocol):
    """The clients' back-channel logout endpoints."""

    async def send(self, uri: str, logout_token: str) -> None:
        """POST ``logout_token`` to ``uri`` as a form field; :class:`LogoutDeliveryFailed`
        unless the client answers 2xx."""
        ...
