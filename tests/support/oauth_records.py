"""Builders of the OpenID Provider's records for storage tests (times from ``T0``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from authgate.domain.openid.records import (
    AuthorizationCode,
    Grant,
    RefreshToken,
    SessionClient,
    TokenFamily,
)
from tests.support.records import T0, verified
from tests.support.stores import Store

DAY = dt.timedelta(days=1)


async def new_account(store: Store, subject: str = "op-user") -> str:
    """A new account's id (the OpenID Provider's rows belong to an existing account)."""
    account, _ = await store.accounts.create_with_identity(verified(subject=subject), T0)
    return account.id


def code(account_id: str, code_hash: str = "code-1", **kw: Any) -> AuthorizationCode:
    fields: dict[str, Any] = {
        "client_id": "web",
        "session_id": "sid-1",
        "redirect_uri": "https://app.example/callback",
        "scopes": ("openid", "email", "offline_access"),
        "nonce": "n-0S6_WzA2Mj",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "auth_time": T0 - dt.timedelta(minutes=5),
        "created_at": T0,
        "expires_at": T0 + dt.timedelta(seconds=60),
    }
    fields.update(kw)
    return AuthorizationCode(code_hash=code_hash, account_id=account_id, **fields)


def family(account_id: str, family_id: str = "fam-1", **kw: Any) -> TokenFamily:
    fields: dict[str, Any] = {
        "client_id": "web",
        "session_id": "sid-1",
        "created_at": T0,
        "expires_at": T0 + dt.timedelta(minutes=5),  # the access token's, without a refresh
    }
    fields.update(kw)
    return TokenFamily(family_id=family_id, account_id=account_id, **fields)


def refresh(
    account_id: str, token_hash: str = "rt-1", family_id: str = "fam-1", **kw: Any
) -> RefreshToken:
    fields: dict[str, Any] = {
        "client_id": "web",
        "session_id": "sid-1",
        "scopes": ("openid", "offline_access"),
        "auth_time": T0 - dt.timedelta(minutes=5),
        "created_at": T0,
        "expires_at": T0 + 30 * DAY,
    }
    fields.update(kw)
    return RefreshToken(token_hash=token_hash, family_id=family_id, account_id=account_id, **fields)


def grant(account_id: str, client_id: str = "web", *scopes: str, **kw: Any) -> Grant:
    fields: dict[str, Any] = {"granted_at": T0, "last_used_at": None}
    fields.update(kw)
    return Grant(account_id=account_id, client_id=client_id, scopes=scopes or ("openid",), **fields)


def session_client(
    account_id: str, session_id: str = "sid-1", client_id: str = "web", **kw: Any
) -> SessionClient:
    fields: dict[str, Any] = {"first_at": T0, "expires_at": T0 + 30 * DAY}
    fields.update(kw)
    return SessionClient(
        session_id=session_id, client_id=client_id, account_id=account_id, **fields
    )
