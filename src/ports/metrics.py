"""Operational metrics. Every argument is a bounded value chosen by the code (a provider's
configured name, an outcome, a reason code), never user data or a secret, so an adapter may use
each as a metric label as it is."""

from __future__ import annotations

from typing import Literal, Protocol

ProviderCall = Literal["token", "jwks", "discovery", "userinfo"]
LimitName = Literal["callback", "initiation", "provider_events", "passkeys"]


class Metrics(Protocol):
    """Where sign-in, session, provider and rate-limit outcomes are reported. Its own methods
    count nothing: :class:`NoMetrics` inherits them."""

    def sign_in(self, provider: str, outcome: str, reason: str) -> None:
        """A completed callback: its outcome and a reason code (``none`` on success)."""
        return None

    def callback_duration(self, provider: str, seconds: float) -> None:
        """How long a callback took, whatever its outcome."""
        return None

    def initiation_duration(self, provider: str, seconds: float) -> None:
        """How long starting a sign-in took."""
        return None

    def rate_limited(self, limit: LimitName) -> None:
        """A request refused by a rate limit."""
        return None

    def sessions_issued(self, provider: str) -> None:
        """A session was issued at a sign-in."""
        return None

    def sessions_revoked(self, count: int) -> None:
        """``count`` sessions were revoked on this instance."""
        return None

    def provider_call(self, provider: str, call: ProviderCall, seconds: float, ok: bool) -> None:
        """A call to a provider's endpoint: how long it took and whether it succeeded."""
        return None


class NoMetrics(Metrics):
    """Counts nothing: the default where metrics are not wanted (and in tests)."""
