"""The providers' event receivers (back-channel logout, Apple notifications, RFC 8935 Security
Event Tokens), one operation per provider and shape, rate-limited like the callback; the token
is the proof and is never logged. Keys that cannot be loaded answer 503 with ``Retry-After``, so
that the delivery is retried (RFC 8935 makes a 400 final)."""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import parse_qs

import attrs
from aiohttp import web

from authgate.entrypoints.http.common import docs
from authgate.entrypoints.http.common.bodies import FORM, app_errors
from authgate.entrypoints.http.common.caller import ClientAddress, admit
from authgate.entrypoints.http.common.errors import OIDC_LOGOUT, event_refusal_body, http_error
from authgate.entrypoints.rest import Api, Call
from authgate.ports.metrics import Metrics
from authgate.ports.provider_events import (
    INVALID_REQUEST,
    EventTokenRejected,
    EventTokenUnavailable,
)
from authgate.ports.ratelimit import RateLimiter
from authgate.services.provider_events import ProviderEventService, Shape

NO_STORE = {"Cache-Control": "no-store"}
SECEVENT = "application/secevent+jwt"
MAX_TOKEN_CHARACTERS = 16 * 1024
_TOO_MANY = "too many provider events; retry later"


@attrs.frozen
class ReceiverRoute:
    """Where one provider's receiver of one shape listens."""

    provider: str
    shape: Shape
    path: str


@attrs.frozen
class LogoutRequest:
    """Back-Channel Logout 1.0 section 2.5: the form the provider posts."""

    logout_token: str


@attrs.frozen
class AppleNotification:
    """A Sign in with Apple server-to-server notification: the signed event as ``payload``."""

    payload: str


@attrs.frozen
class LogoutError:
    """Back-Channel Logout 1.0 section 2.8 (OAuth 2.0's error response), with RFC 8935's
    members beside (the refusal of every receiver carries ``err`` and ``description``)."""

    error: str
    error_description: str
    err: str
    description: str


@attrs.frozen
class SecurityEventError:
    """RFC 8935 section 2.3: why a Security Event Token was refused (its 2.4 codes)."""

    err: str
    description: str


SUCCESS = {Shape.BACKCHANNEL_LOGOUT: 200, Shape.APPLE: 200, Shape.RISC: 202}
BODIES: dict[Shape, dict[str, type | None]] = {
    Shape.BACKCHANNEL_LOGOUT: {FORM: LogoutRequest},
    Shape.APPLE: {"application/json": AppleNotification},
    Shape.RISC: {SECEVENT: None},
}
DESCRIPTIONS = {
    Shape.BACKCHANNEL_LOGOUT: "OpenID Connect Back-Channel Logout 1.0: the provider's logout "
    "token ends the sessions of its sid and/or sub",
    Shape.APPLE: "Sign in with Apple server-to-server notification",
    Shape.RISC: "Security Event Token (RFC 8417) pushed per RFC 8935 (Cross-Account Protection)",
}


@attrs.define(slots=False, eq=False)
class ProviderEventOperations:
    """Registers one receiver operation per route."""

    service: ProviderEventService
    routes: list[ReceiverRoute]
    limiter: RateLimiter
    client_address: ClientAddress
    metrics: Metrics

    def register(self, api: Api) -> None:
        docs.describe_tags(api, docs.PROVIDER_EVENTS)
        for route in self.routes:
            refusal: type = (
                LogoutError if route.shape is Shape.BACKCHANNEL_LOGOUT else SecurityEventError
            )
            api.operation(
                "POST",
                route.path,
                raw_body=BODIES[route.shape],
                status=SUCCESS[route.shape],
                responses={
                    SUCCESS[route.shape]: DESCRIPTIONS[route.shape],
                    400: refusal,
                    **app_errors(429, 503),
                },
                operation_id=f"receive_{route.shape.value}_{route.provider}",
                tags=(docs.PROVIDER_EVENTS,),
                summary=f"{SUMMARIES[route.shape]} from {route.provider}",
                description=f"{DESCRIPTIONS[route.shape]}, from provider {route.provider}. "
                "The token is the proof (no session authentication); rate-limited per client.",
                examples=_examples(route.shape),
            )(functools.partial(self._receive, route))

    async def _receive(self, route: ReceiverRoute, call: Call[bytes]) -> web.StreamResponse:
        request = call.request
        address = self.client_address.of(request)
        key = self.client_address.limit_key(address)
        await admit(self.limiter, key, self.metrics, "provider_events", _TOO_MANY)
        client = self.client_address.client(request, address)
        # Its refusals are answered by the error map (http.errors), in this receiver's shape.
        request[OIDC_LOGOUT] = route.shape is Shape.BACKCHANNEL_LOGOUT
        try:
            token = _token_of(route.shape, call.body, request.content_type)
        except EventTokenRejected as e:
            # A body that is not this receiver's never reaches the service: audit it here.
            await self.service.refused(route.provider, route.shape, e, client)
            raise
        await self.service.receive(route.provider, route.shape, token, client)
        return web.Response(status=SUCCESS[route.shape], headers=NO_STORE)


def _token_of(shape: Shape, body: bytes, content_type: str) -> str:
    """The event token out of the shape's body; ``invalid_request`` when it is not one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("the body is not UTF-8 text") from None
    if shape is Shape.BACKCHANNEL_LOGOUT:
        if content_type != FORM:
            raise _malformed(f"the body must be {FORM}")
        try:
            fields = parse_qs(text, strict_parsing=bool(text), max_num_fields=16)
        except ValueError:
            raise _malformed("the body is not a form") from None
        tokens = fields.get("logout_token", [])
        if len(tokens) != 1:
            raise _malformed("the form must carry exactly one logout_token")
        token = tokens[0]
    elif shape is Shape.APPLE:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise _malformed("the body is not JSON") from None
        payload = data.get("payload") if isinstance(data, dict) else None
        if not isinstance(payload, str):
            raise _malformed("the body has no payload string")
        token = payload
    else:
        token = text.strip()
    if not token or len(token) > MAX_TOKEN_CHARACTERS:
        raise _malformed("the event token is missing or too long")
    return token


def _malformed(description: str) -> EventTokenRejected:
    return EventTokenRejected(INVALID_REQUEST, description)


SUMMARIES = {
    Shape.BACKCHANNEL_LOGOUT: "Receive a back-channel logout",
    Shape.APPLE: "Receive an Apple server-to-server notification",
    Shape.RISC: "Receive a RISC security event",
}


def _examples(shape: Shape) -> dict[int, dict[str, dict[str, Any]]]:
    malformed = _malformed("the event token is missing or too long")
    return {
        400: {
            malformed.code: event_refusal_body(
                malformed, oidc_logout=shape is Shape.BACKCHANNEL_LOGOUT
            )
        },
        429: {"rate_limited": {"error": "rate_limited", "message": _TOO_MANY}},
        503: {"temporarily_unavailable": http_error(EventTokenUnavailable("keys")).body},
    }
