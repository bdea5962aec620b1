"""Authorization codes and access tokens issued by the development provider (in memory).

Codes are single use and short-lived; both kinds expire and the store is bounded, so a long
development session cannot grow it without limit.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

CODE_TTL_SECONDS = 120.0
ACCESS_TOKEN_TTL_SECONDS = 3600.0
MAX_ENTRIES = 10_000


@attrs.frozen
class CodeGrant:
    """What an authorization code stands for."""

    client_id: str
    redirect_uri: str
    user_key: str
    scopes: tuple[str, ...]
    nonce: str | None
    code_challenge: str | None
    auth_time: int


@attrs.frozen
class TokenGrant:
    """What an access token stands for."""

    client_id: str
    user_key: str
    scopes: tuple[str, ...]


G = TypeVar("G")


class _Expiring(Generic[G]):
    def __init__(self, ttl: float, now: Callable[[], float]) -> None:
        self._ttl = ttl
        self._now = now
        self._items: dict[str, tuple[G, float]] = {}

    def add(self, grant: G) -> str:
        now = self._now()
        self._prune(now)
        value = secrets.token_urlsafe(32)
        self._items[value] = (grant, now + self._ttl)
        return value

    def get(self, value: str, *, take: bool = False) -> G | None:
        entry = self._items.pop(value, None) if take else self._items.get(value)
        if entry is None or entry[1] <= self._now():
            return None  # an expired entry left here goes at the next add
        return entry[0]

    def _prune(self, now: float) -> None:
        for value in [v for v, (_, exp) in self._items.items() if exp <= now]:
            del self._items[value]
        while len(self._items) >= MAX_ENTRIES:  # oldest first (insertion order)
            del self._items[next(iter(self._items))]


class GrantStore:
    """Codes (taken once) and access tokens."""

    def __init__(
        self,
        now: Callable[[], float] = time.time,
        code_ttl: float = CODE_TTL_SECONDS,
        token_ttl: float = ACCESS_TOKEN_TTL_SECONDS,
    ) -> None:
        self.token_ttl = token_ttl
        self._codes: _Expiring[CodeGrant] = _Expiring(code_ttl, now)
        self._tokens: _Expiring[TokenGrant] = _Expiring(token_ttl, now)

    def issue_code(self, grant: CodeGrant) -> str:
        return self._codes.add(grant)

    def take_code(self, code: str) -> CodeGrant | None:
        """The grant of ``code``, removing it: a second use finds nothing."""
        return self._codes.get(code, take=True)

    def issue_token(self, grant: TokenGrant) -> str:
        return self._tokens.add(grant)

    def token(self, value: str) -> TokenGrant | None:
        return self._tokens.get(value)
