"""Client authentication at the provider's token endpoint (and wherever a client authenticates as
there: revocation, introspection): from the ``Authorization`` header and the form fields to the
authenticated :class:`~authgate.domain.openid.clients.Client`, or an RFC 6749 section 5.2 error.

Methods: ``client_secret_basic`` (RFC 6749 section 2.3.1; the raw values are accepted beside
the form-urlencoded ones, which many clients skip), ``client_secret_post``,
``private_key_jwt`` (RFC 7523 section 2.2; its ``jti`` is remembered until ``exp`` in the store
of one-time ids, so every instance refuses a replay) and ``none``. A client authenticates only
with the method it registered; more than one method at once is ``invalid_request`` (RFC 6749
section 2.3). Secrets are compared in constant time (every secret of a rotation, always). Why
authentication failed is logged, never answered.

A service, not an adapter: it is the provider's rule for who a caller is, over plain values;
only an assertion's signature is an adapter's
(:class:`~authgate.ports.openid.ClientAssertionSignatures`).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

import attrs

from authgate.domain.model import EventId
from authgate.domain.openid.clients import AuthMethod, Client
from authgate.domain.openid.refusals import InvalidClient, OAuthInvalidRequest, OAuthUnavailable
from authgate.ports.clock import Clock
from authgate.ports.openid import (
    AssertionRejected,
    ClientAssertionSignatures,
    ClientKeysUnavailable,
)
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.openid.client_directory import ClientDirectory

log = logging.getLogger("authgate.security")

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
BASIC = "Basic"
LEEWAY = dt.timedelta(seconds=30)
# The longest an assertion may live: its jti is remembered that long. Long enough for clients
# that sign one for an hour (Authlib's default), short enough to keep the memory small.
MAX_ASSERTION_LIFETIME = dt.timedelta(hours=1)
MAX_ASSERTION_LENGTH = 16 * 1024
# What the one-time store records an assertion's jti under (beside providers' event ids).
ASSERTION_ISSUER_PREFIX = "client:"


@attrs.define(eq=False, repr=False, slots=False)
class ClientAuthentication:
    """Authenticates the client of a request."""

    _clients: ClientDirectory
    _assertions: ClientAssertionSignatures
    _units: UnitOfWork
    _clock: Clock
    # The provider's issuer identifier, the one ``aud`` an assertion may have.
    _issuer: str = attrs.field(kw_only=True)

    async def authenticate(self, authorization: str | None, form: Mapping[str, str]) -> Client:
        """The client that ``authorization`` (the ``Authorization`` header, if any) and
        ``form`` (the request's form fields, each once: the endpoint refuses a repeated one)
        authenticate. Raises :class:`~authgate.domain.openid.refusals.InvalidClient`,
        :class:`~authgate.domain.openid.refusals.OAuthInvalidRequest` or, when a client's keys
        cannot be fetched, :class:`~authgate.domain.openid.refusals.OAuthUnavailable`."""
        presented: list[AuthMethod] = []
        if authorization is not None:
            presented.append("client_secret_basic")
        if "client_secret" in form:
            presented.append("client_secret_post")
        if "client_assertion" in form or "client_assertion_type" in form:
            presented.append("private_key_jwt")
        if len(presented) > 1:
            raise OAuthInvalidRequest(
                "the client authenticated in more than one way; use one",
                f"client authentication: several methods at once ({', '.join(presented)})",
            )
        if authorization is not None:
            return await self._basic(authorization, form)
        if presented == ["private_key_jwt"]:
            return await self._assertion(form)
        method = presented[0] if presented else "none"  # client_secret_post or none
        client = await self._named_client(form)
        self._check_method(client, method)
        if method == "client_secret_post" and not client.secret_matches(form["client_secret"]):
            raise _refused(InvalidClient(f"client {_shown(client.client_id)}: wrong secret"))
        return client

    async def _basic(self, authorization: str, form: Mapping[str, str]) -> Client:
        def refuse(detail: str) -> InvalidClient:
            return _refused(InvalidClient(detail, challenge=BASIC))

        scheme, _, credentials = authorization.strip().partition(" ")
        if scheme.lower() != "basic":
            raise refuse("Authorization header of another scheme than Basic")
        try:
            text = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise refuse("Basic credentials are not base64 of UTF-8 text") from None
        raw_id, colon, raw_secret = text.partition(":")
        if not colon:
            raise refuse("Basic credentials without a colon")
        decoded = unquote_plus(raw_id)
        client = await self._clients.find(decoded)
        if client is None and decoded != raw_id:
            client = await self._clients.find(raw_id)
        if client is None:
            raise refuse(f"Basic credentials of an unknown client {_shown(raw_id)}")
        named = form.get("client_id")
        if named is not None and named != client.client_id:
            raise refuse(f"client_id {_shown(named)} is not the Basic credentials' client")
        self._check_method(client, "client_secret_basic", BASIC)
        # Both spellings are always compared, so the time does not tell which one matched.
        encoded = client.secret_matches(unquote_plus(raw_secret))
        if not (client.secret_matches(raw_secret) | encoded):
            raise refuse(f"client {_shown(client.client_id)}: wrong secret")
        return client

    async def _assertion(self, form: Mapping[str, str]) -> Client:
        assertion, kind = form.get("client_assertion"), form.get("client_assertion_type")
        if not assertion or not kind:
            raise OAuthInvalidRequest(
                "client_assertion and client_assertion_type go together",
                "client authentication: an assertion without its type, or a type alone",
            )
        if kind != JWT_BEARER:
            raise _refused(InvalidClient(f"client_assertion_type {_shown(kind)} is not JWT"))
        if len(assertion) > MAX_ASSERTION_LENGTH:
            raise _refused(InvalidClient("client assertion too long"))
        # The assertion names its client (sub); its signature proves it below.
        subject = _unverified_subject(assertion)
        named = form.get("client_id")
        if named is not None and subject is not None and named != subject:
            raise _refused(InvalidClient(f"client_id {_shown(named)} is not the assertion's"))
        client_id = named if named is not None else subject
        client = await self._clients.find(client_id) if client_id is not None else None
        if client is None:
            raise _refused(InvalidClient(f"client assertion of unknown {_shown(client_id)}"))
        self._check_method(client, "private_key_jwt")
        try:
            claims = await self._assertions.verified_claims(client, assertion)
        except AssertionRejected as e:
            raise _refused(InvalidClient(str(e))) from None
        except ClientKeysUnavailable as e:
            log.warning("client authentication: %s", e)
            raise OAuthUnavailable("the client's keys cannot be fetched; retry later") from None
        expires_at = self._check_assertion_claims(client, claims)
        jti = claims["jti"]
        now = self._clock.now()
        async with self._units.begin() as tx:
            first = await tx.seen_events.first_sight(
                EventId(ASSERTION_ISSUER_PREFIX + client.client_id, jti, expires_at), now
            )
        if not first:
            raise _refused(
                InvalidClient(f"client {_shown(client.client_id)}: assertion jti used before")
            )
        return client

    def _check_assertion_claims(self, client: Client, claims: Mapping[str, Any]) -> dt.datetime:
        """When the assertion expires, once its claims pass RFC 7523 section 3."""
        who = f"client {_shown(client.client_id)}: assertion"

        def refuse(problem: str) -> InvalidClient:
            return _refused(InvalidClient(f"{who} {problem}"))

        if claims.get("iss") != client.client_id or claims.get("sub") != client.client_id:
            raise refuse("iss and sub must both be the client_id")
        problem = self._audience_problem(claims.get("aud"))
        if problem is not None:
            raise refuse(problem)
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > 255:
            raise refuse("has no jti")
        now = self._clock.now()
        exp = _instant(claims.get("exp"))
        if exp is None:
            raise refuse("has no exp")
        if exp <= now - LEEWAY:
            raise refuse("has expired")
        if exp > now + MAX_ASSERTION_LIFETIME + LEEWAY:
            raise refuse("lives longer than an hour")
        for name in ("nbf", "iat"):
            if name in claims:
                at = _instant(claims[name])
                if at is None or at > now + LEEWAY:
                    raise refuse(f"{name} is in the future or not a time")
        return exp

    def _audience_problem(self, aud: Any) -> str | None:
        """Why ``aud`` is not the one audience an assertion may have, or None: exactly the
        issuer identifier, as a single string (the OpenID Foundation's 2025 advisory on
        private_key_jwt audiences). A client takes the token endpoint's URL from the metadata
        of whichever server it talks to; a malicious server's metadata can name authgate's
        token endpoint as its own, and so obtain an assertion it then presents here as the
        client. The issuer is what a client checks metadata against, so only an assertion
        for authgate's issuer, and for nothing else beside it, was meant for authgate."""
        if isinstance(aud, list):
            return "aud must be the issuer as one string, not a list"
        if aud != self._issuer:
            return "aud must be the issuer"
        return None

    async def _named_client(self, form: Mapping[str, str]) -> Client:
        client_id = form.get("client_id")
        if not client_id:
            raise _refused(InvalidClient("no client authentication and no client_id"))
        client = await self._clients.find(client_id)
        if client is None:
            raise _refused(InvalidClient(f"unknown client {_shown(client_id)}"))
        return client

    @staticmethod
    def _check_method(client: Client, method: AuthMethod, challenge: str | None = None) -> None:
        if client.token_endpoint_auth_method != method:
            raise _refused(
                InvalidClient(
                    f"client {_shown(client.client_id)} registered "
                    f"{client.token_endpoint_auth_method}, not {method}",
                    challenge=challenge,
                )
            )


def _refused(error: InvalidClient) -> InvalidClient:
    log.info("client authentication failed: %s", error.detail)
    return error


def _unverified_subject(assertion: str) -> str | None:
    """The ``sub`` an assertion claims (``iss`` when it has none), before any check: only to
    know whose keys to check it with."""
    parts = assertion.split(".")
    if len(parts) != 3:
        return None
    try:
        segment = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(segment))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(claims, dict):
        return None
    subject = claims.get("sub", claims.get("iss"))
    return subject if isinstance(subject, str) else None


def _instant(value: Any) -> dt.datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _shown(value: object) -> str:
    """A value from the request for a log line: quoted, bounded."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
