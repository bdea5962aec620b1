"""Event tokens signed by a fake provider with its own published key, as providers push them:
OpenID Connect logout tokens, Sign in with Apple notifications and Security Event
Tokens (RISC, RFC 8417), each optionally spoiled by an :class:`EventFault`."""

from __future__ import annotations

import base64
import enum
import json
import secrets
from typing import Any

from joserfc import jwt

from tests.fakeidp.provider import FakeProvider

BACKCHANNEL_LOGOUT = "http://schemas.openid.net/event/backchannel-logout"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"


class EventFault(enum.Enum):
    """How an event token is spoiled."""

    WRONG_SIGNATURE = "wrong_signature"  # another key, under the published key's kid
    WRONG_ISS = "wrong_iss"
    WRONG_AUD = "wrong_aud"
    STALE_IAT = "stale_iat"  # issued two days ago
    FUTURE_IAT = "future_iat"
    NO_JTI = "no_jti"
    ALG_NONE = "alg_none"


def sign_event(
    p: FakeProvider,
    claims: dict[str, Any],
    *,
    typ: str = "JWT",
    fault: EventFault | None = None,
    kid: str | None = None,
) -> str:
    """``claims`` with iss, aud, iat and a fresh jti filled in (unless given), spoiled per
    ``fault``, signed by ``p``'s signing key; with ``kid``, by a key the provider does not
    publish, under that kid (a forgery, or a key the provider has not published yet)."""
    assert p.signing_key is not None, "this provider has no signing key"
    now = int(p._now())
    payload: dict[str, Any] = {
        "iss": p.issuer,
        "aud": p.client_id,
        "iat": now,
        "jti": secrets.token_hex(12),
        **claims,
    }
    match fault:
        case EventFault.WRONG_ISS:
            payload["iss"] = "https://evil.example"
        case EventFault.WRONG_AUD:
            payload["aud"] = "someone-elses-client-id"
        case EventFault.STALE_IAT:
            payload["iat"] = now - 2 * 86400
            payload.pop("exp", None)
        case EventFault.FUTURE_IAT:
            payload["iat"] = now + 3600
        case EventFault.NO_JTI:
            payload.pop("jti")
    header = {"alg": p.alg, "kid": p.kid, "typ": typ}
    if fault is EventFault.ALG_NONE:
        head = _b64json({"alg": "none", "typ": typ})
        return f"{head}.{_b64json(payload)}."
    key = p._other_key() if fault is EventFault.WRONG_SIGNATURE else p.signing_key
    if kid is not None:
        header["kid"] = kid
        key = p._other_key()
    return jwt.encode(header, payload, key, algorithms=[p.alg])


def logout_token(
    p: FakeProvider,
    *,
    sub: str | None = None,
    sid: str | None = None,
    fault: EventFault | None = None,
    kid: str | None = None,
    **claims: Any,
) -> str:
    """A Back-Channel Logout 1.0 logout token (``typ: logout+jwt``); a claim given as None is
    left out."""
    body: dict[str, Any] = {"events": {BACKCHANNEL_LOGOUT: {}}, "exp": int(p._now()) + 120}
    if sub is not None:
        body["sub"] = sub
    if sid is not None:
        body["sid"] = sid
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    return sign_event(p, body, typ="logout+jwt", fault=fault, kid=kid)


def apple_notification(
    p: FakeProvider,
    event_type: str,
    sub: str,
    *,
    fault: EventFault | None = None,
    email: str | None = "alice@privaterelay.appleid.com",
    kid: str | None = None,
    **claims: Any,
) -> dict[str, str]:
    """The JSON body Apple posts: ``{"payload": <JWT>}``, its ``events`` claim a JSON string."""
    now = int(p._now())
    event: dict[str, Any] = {"type": event_type, "sub": sub, "event_time": now * 1000}
    if event_type.startswith("email-") and email is not None:
        event["email"] = email
        event["is_private_email"] = "true"
    body = {"events": json.dumps(event), "exp": now + 86400, **claims}
    return {"payload": sign_event(p, body, fault=fault, kid=kid)}


def security_event(
    p: FakeProvider,
    event_type: str,
    sub: str | None,
    *,
    fault: EventFault | None = None,
    reason: str | None = None,
    state: str | None = None,
    subject_type: str = "iss-sub",
    kid: str | None = None,
    subject: dict[str, Any] | None = None,
    **claims: Any,
) -> str:
    """A RISC Security Event Token as Google sends it: its issuer with a trailing slash, the
    subject ``{"subject_type": "iss-sub", "iss": …, "sub": …}`` inside the event (or
    ``subject`` as given); ``event_type`` a RISC name or a whole URI."""
    payload: dict[str, Any] = {}
    if sub is not None:
        payload["subject"] = {"subject_type": subject_type, "iss": p.issuer + "/", "sub": sub}
    if reason is not None:
        payload["reason"] = reason
    if state is not None:
        payload["state"] = state
    if subject is not None:
        payload["subject"] = subject
    uri = event_type if "://" in event_type else RISC + event_type
    body = {"iss": p.issuer + "/", "events": {uri: payload}, **claims}
    return sign_event(p, body, typ="secevent+jwt", fault=fault, kid=kid)


def _b64json(value: Any) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
