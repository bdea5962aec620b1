"""Builders of the domain's records for storage tests."""

from __future__ import annotations

import datetime as dt
from typing import Any

from authgate.domain.model import (
    Intent,
    Outcome,
    PendingSignIn,
    ProviderIdentity,
    SignInEvent,
    VerifiedIdentity,
)

T0 = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    """``T0`` plus some seconds."""
    return T0 + dt.timedelta(seconds=seconds)


def verified(
    provider: str = "google", subject: str = "1001", email: str | None = None, **kw: Any
) -> VerifiedIdentity:
    return VerifiedIdentity(
        identity=ProviderIdentity(provider, subject),
        email=email if email is not None else f"{subject}@{provider}.example",
        email_verified=True,
        name=kw.pop("name", f"User {subject}"),
        profile=kw.pop("profile", {"locale": "en", "picture": "https://img.example/x.png"}),
        **kw,
    )


def pending(
    state: str = "state-1",
    *,
    created: dt.datetime = T0,
    ttl: dt.timedelta = dt.timedelta(minutes=10),
    **kw: Any,
) -> PendingSignIn:
    fields: dict[str, Any] = {
        "provider": "google",
        "redirect_uri": "https://auth.example.com/v1/auth/google/callback",
        "intent": Intent.LOGIN,
        "code_verifier": "v" * 64,
        "nonce": "n-123",
        "binding_hash": "b" * 64,
        "return_to": None,
        "account_id": None,
    }
    fields.update(kw)
    return PendingSignIn(state=state, created_at=created, expires_at=created + ttl, **fields)


def event(
    seconds: float = 0,
    outcome: Outcome = Outcome.SIGNED_IN,
    provider: str = "google",
    **kw: Any,
) -> SignInEvent:
    fields: dict[str, Any] = {
        "client_address": "203.0.113.7",
        "user_agent": "Mozilla/5.0",
        "account_id": None,
        "detail": None,
    }
    fields.update(kw)
    return SignInEvent(at=at(seconds), provider=provider, outcome=outcome, **fields)
