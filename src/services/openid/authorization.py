"""The OpenID Provider's authorization endpoint as a use case: from a parsed authorization
request and the browser's authgate session (if any) to what happens next: a code at once
(single sign-on), a sign-in first, or consent (docs/openid-provider.md, "What the browser
sees").

Freshness (``prompt=login``, ``max_age``) is only the session's signed ``auth_time``
(:mod:`authgate.domain.login_proof`), never the moment of authgate's callback. A resumed
request knows the sign-in it started only by the session's signed ``resumes`` (never by the
resumed address, so no browser can claim a sign-in it did not make); when that sign-in still
does not satisfy it, it ends with ``login_required`` rather than sending the browser round
again. Codes: 256 random bits kept as their digest, live at most a minute, bound to the
client, the ``redirect_uri``, the PKCE challenge, the nonce, the session and its ``auth_time``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

import attrs

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.authorization_request import (
    PROMPT_CONSENT,
    PROMPT_LOGIN,
    PROMPT_NONE,
    AuthorizationRequest,
    parse_authorization_request,
    requested_client_id,
)
from authgate.domain.openid.clients import Client
from authgate.domain.openid.records import CODE_MAX_LIFETIME, AuthorizationCode, Grant, token_digest
from authgate.domain.secrets import new_secret
from authgate.ports.clock import Clock
from authgate.ports.jose import InvalidToken, TokenSigner
from authgate.ports.session_tokens import SessionClaims
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.openid.client_directory import ClientDirectory


@attrs.frozen
class AuthorizationPolicy:
    """``resume_window``: how long after its sign-in began a session resumes the request that
    started it (the pending sign-in lives ten minutes); ``skew``: how much earlier than the
    sign-in's start the provider may date a login it made for it (the two clocks differ)."""

    resume_window: dt.timedelta = dt.timedelta(minutes=15)
    skew: dt.timedelta = dt.timedelta(seconds=60)


@attrs.frozen
class SignInNeeded:
    """The browser must sign in first, then come back to the request; ``fresh``: only a login
    that the sign-in proves (a signed ``auth_time``) will do, whatever session the provider
    holds."""

    request: AuthorizationRequest
    client: Client
    fresh: bool


@attrs.frozen
class ConsentNeeded:
    """The person must consent to the client's request; ``new_scopes`` are those not granted
    before (all of them on a first consent); ``seen``: when the grant the page shows was
    given (None: none), what its answer is recorded against (a consent form is single use)."""

    request: AuthorizationRequest
    client: Client
    session: SessionClaims
    new_scopes: tuple[str, ...]
    seen: dt.datetime | None = None


class ConsentAnswered(Exception):
    """The consent page's answer came after the grant changed: the same form was answered
    already, or consent was given or withdrawn elsewhere since the page was shown. Nothing
    was recorded."""


@attrs.frozen
class CodeIssued:
    """The authorization response: ``code`` for the client at its ``redirect_uri``."""

    request: AuthorizationRequest
    client: Client
    code: str = attrs.field(repr=False)


Outcome = SignInNeeded | ConsentNeeded | CodeIssued


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class AuthorizationService:
    """Decides authorization requests and issues their codes."""

    clients: ClientDirectory
    signer: TokenSigner
    units: UnitOfWork
    clock: Clock
    policy: AuthorizationPolicy = attrs.field(factory=AuthorizationPolicy)

    @property
    def issuer(self) -> str:
        """The issuer every authorization response names (``iss``, RFC 9207)."""
        return self.signer.issuer

    async def parse(
        self, params: Mapping[str, Sequence[str]]
    ) -> tuple[AuthorizationRequest, Client]:
        """The request its parameters make; raises
        :class:`~authgate.domain.openid.authorization_request.NotRedirectable` or
        :class:`~authgate.domain.openid.authorization_request.AuthorizationRefused`."""
        client = await self.clients.find(requested_client_id(params))
        return parse_authorization_request(params, client)

    async def authorize(
        self, request: AuthorizationRequest, client: Client, session: SessionClaims | None
    ) -> Outcome:
        """What the request leads to for a browser with ``session`` (its live authgate session,
        None without one). Raises :class:`AuthorizationRefused`."""
        now = self.clock.now()
        silent = PROMPT_NONE in request.prompt
        if session is not None and not session.session_id:
            session = None  # a token from before sessions had ids: sign in again
        resumed_at = self._resumed_at(request, session, now)
        if request.id_token_hint is not None:
            hinted = self._hinted_subject(request, client)
            if session is not None and session.account_id != hinted:
                if silent or resumed_at is not None:
                    # Silent, or the sign-in this request started signed in someone else.
                    why = "another account is signed in"
                    raise request.refuse(client, "login_required", why)
                session = None
        if session is None or not self._fresh_enough(request, session, resumed_at, now):
            if silent:
                why = "no sign-in recent enough" if session else "nobody is signed in"
                raise request.refuse(client, "login_required", why)
            if resumed_at is not None:
                why = "the sign-in did not prove a login recent enough for this request"
                raise request.refuse(client, "login_required", why)
            return SignInNeeded(request, client, fresh=request.needs_fresh_login)
        async with self.units.begin() as tx:
            if not client.first_party:
                grant = await tx.grants.get(session.account_id, client.client_id)
                granted = grant.scopes if grant is not None else frozenset()
                new = tuple(s for s in request.scopes if s not in granted)
                # A client described by a metadata document is asked about every time: the
                # document, or the domain serving it, may have changed hands since.
                every_time = client.origin == "metadata_document"
                if new or every_time or PROMPT_CONSENT in request.prompt:
                    if silent:
                        why = "the person has not consented"
                        raise request.refuse(client, "consent_required", why)
                    seen = grant.granted_at if grant is not None else None
                    return ConsentNeeded(request, client, session, new, seen)
            code = await self._issue_code(tx, request, client, session, now)
        return CodeIssued(request, client, code)

    async def consent(
        self,
        request: AuthorizationRequest,
        client: Client,
        session: SessionClaims,
        *,
        approved: bool,
        seen: dt.datetime | None = None,
    ) -> CodeIssued:
        """The person's answer on the consent page: approved, the grant is recorded (its
        scopes widened to the request's) and the code issued in one unit of work, only while
        the grant is as the page found it (``seen``), else :class:`ConsentAnswered`; declined,
        ``access_denied``."""
        if not approved:
            raise request.refuse(client, "access_denied", "the person declined")
        now = self.clock.now()
        async with self.units.begin() as tx:
            grant = Grant(session.account_id, client.client_id, request.scopes, granted_at=now)
            if await tx.grants.consent(grant, seen) is None:
                raise ConsentAnswered()
            code = await self._issue_code(tx, request, client, session, now)
        return CodeIssued(request, client, code)

    def _resumed_at(
        self, request: AuthorizationRequest, session: SessionClaims | None, now: dt.datetime
    ) -> dt.datetime | None:
        """When the sign-in that this request started began, if ``session`` is the one it
        issued (its signed claims name this request), and not longer ago than the window."""
        if session is None or session.resumes != request.resume_key:
            return None
        started = session.signin_started_at
        if (
            started is None
            or not now - self.policy.resume_window <= started <= now + self.policy.skew
        ):
            return None
        return started

    def _fresh_enough(
        self,
        request: AuthorizationRequest,
        session: SessionClaims,
        resumed_at: dt.datetime | None,
        now: dt.datetime,
    ) -> bool:
        if not request.needs_fresh_login:
            return True
        auth_time = session.auth_time
        if auth_time is None or auth_time <= UNPROVEN_AUTH_TIME:
            return False
        if resumed_at is not None and auth_time >= resumed_at - self.policy.skew:
            return True
        if PROMPT_LOGIN in request.prompt:
            return False
        assert request.max_age is not None
        return now - auth_time <= dt.timedelta(seconds=request.max_age)

    def _hinted_subject(self, request: AuthorizationRequest, client: Client) -> str:
        """The account an ``id_token_hint`` names: an ID token this provider issued to the
        client (expired or not, as OpenID Connect Core 3.1.2.1 allows)."""
        assert request.id_token_hint is not None
        try:
            verified = self.signer.verify_id_token(request.id_token_hint)
        except InvalidToken:
            why = "id_token_hint is not an ID token this provider issued"
            raise request.refuse(client, "invalid_request", why) from None
        if client.client_id not in verified.audiences:
            why = "id_token_hint was issued to another client"
            raise request.refuse(client, "invalid_request", why)
        return verified.subject

    async def _issue_code(
        self,
        tx: Transaction,
        request: AuthorizationRequest,
        client: Client,
        session: SessionClaims,
        now: dt.datetime,
    ) -> str:
        code = new_secret()
        await tx.authorization_codes.add(
            AuthorizationCode(
                code_hash=token_digest(code),
                client_id=client.client_id,
                account_id=session.account_id,
                session_id=session.session_id,
                redirect_uri=request.redirect_uri,
                scopes=request.scopes,
                nonce=request.nonce,
                code_challenge=request.code_challenge,
                auth_time=session.auth_time or UNPROVEN_AUTH_TIME,
                created_at=now,
                expires_at=now + min(client.code_lifetime, CODE_MAX_LIFETIME),
                resources=request.resources,
            )
        )
        return code
