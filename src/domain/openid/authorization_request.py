"""An OpenID Connect authorization request (Core 1.0 section 3.1.2.1), read from its
parameters, with the checks that need no store. An unknown client or unregistered
``redirect_uri`` is :class:`NotRedirectable` (an error page: a redirect would make an open
redirector); any other fault is :class:`AuthorizationRefused` (RFC 6749 section 4.1.2.1).

Only the code flow is served, with PKCE ``S256`` for every client. ``resource`` (RFC 8707) may
be repeated: each must be one of the client's registered resources (else ``invalid_target``);
the code remembers them, and its access tokens are for them. ``display``, ``ui_locales``,
``acr_values`` and other unknown parameters are ignored (as Core 3.1.2.1 allows); ``request``
and ``request_uri`` are refused, never silently ignored.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit

import attrs

from authgate.domain.openid.clients import (
    AUTHORIZATION_CODE_GRANT,
    SUPPORTED_SCOPES,
    Client,
    resource_problem,
)
from authgate.domain.text import has_control_characters

RESPONSE_MODES = ("query", "form_post")
PROMPT_NONE, PROMPT_LOGIN, PROMPT_CONSENT = "none", "login", "consent"
OPENID = "openid"
OFFLINE_ACCESS = "offline_access"
# RFC 8707's parameter, the one that may be repeated (one per resource server).
RESOURCE = "resource"
INVALID_TARGET = "invalid_target"
# authgate's own parameter: ``provider`` sends the browser straight to one configured identity
# provider instead of authgate's sign-in page.
PROVIDER_PARAMETER = "provider"
MAX_NONCE_LENGTH = 512
# The state comes back unchanged; bounded so that the request still fits in the URL that
# resumes it after a sign-in.
MAX_STATE_LENGTH = 1024
MAX_LOGIN_HINT_LENGTH = 256
MAX_ID_TOKEN_HINT_LENGTH = 16 * 1024
MAX_MAX_AGE = 10 * 365 * 86400
# An S256 code challenge: base64url of a SHA-256 digest, without padding (RFC 7636 4.2).
_S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
_MAX_AGE = re.compile(r"[0-9]{1,10}")
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Parameters that must not repeat (RFC 6749 section 3.1); others are ignored however often.
_SINGLE = (
    "response_type",
    "scope",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "prompt",
    "max_age",
    "login_hint",
    "id_token_hint",
    "request",
    "request_uri",
    PROVIDER_PARAMETER,
)


@attrs.define
class NotRedirectable(Exception):
    """Answered with an error page; ``description`` is safe to show."""

    description: str


@attrs.define
class AuthorizationRefused(Exception):
    """An error answered at the client's registered ``redirect_uri`` with the request's
    ``state`` unchanged (RFC 6749 4.1.2.1, OpenID Connect Core 3.1.2.6)."""

    error: str
    description: str
    client: Client = attrs.field(kw_only=True)
    redirect_uri: str = attrs.field(kw_only=True)
    state: str | None = attrs.field(kw_only=True)
    response_mode: str = attrs.field(default="query", kw_only=True)

    def __str__(self) -> str:
        return f"{self.error}: {self.description}"


@attrs.frozen
class AuthorizationRequest:
    """A well-formed authorization request of a registered client to one of its redirect
    URIs; ``scopes`` in the order asked, each once."""

    client_id: str
    redirect_uri: str
    scopes: tuple[str, ...]
    code_challenge: str
    response_mode: str = "query"
    state: str | None = None
    nonce: str | None = None
    prompt: frozenset[str] = frozenset()
    max_age: int | None = None
    login_hint: str | None = None
    id_token_hint: str | None = None
    provider: str | None = None
    resources: tuple[str, ...] = ()

    @property
    def needs_fresh_login(self) -> bool:
        """Whether only a recent sign-in will do (``prompt=login`` or ``max_age``)."""
        return PROMPT_LOGIN in self.prompt or self.max_age is not None

    def parameters(self) -> list[tuple[str, str]]:
        """The request's meaning as parameters again, as carried through the sign-in and the
        consent page (not the ``id_token_hint``, which only a silent answer uses)."""
        out = [
            ("response_type", "code"),
            ("client_id", self.client_id),
            ("redirect_uri", self.redirect_uri),
            ("scope", " ".join(self.scopes)),
            ("code_challenge", self.code_challenge),
            ("code_challenge_method", "S256"),
        ]
        if self.response_mode != "query":
            out.append(("response_mode", self.response_mode))
        optional = (
            ("state", self.state),
            ("nonce", self.nonce),
            ("prompt", " ".join(sorted(self.prompt)) if self.prompt else None),
            ("max_age", str(self.max_age) if self.max_age is not None else None),
            ("login_hint", self.login_hint),
        )
        out += [(name, value) for name, value in optional if value is not None]
        out += [(RESOURCE, resource) for resource in self.resources]
        return out

    def refuse(self, client: Client, error: str, description: str) -> AuthorizationRefused:
        """The refusal answered at this request's ``redirect_uri``, ``state`` and mode."""
        to = _AnswerTo(client, self.redirect_uri, self.state, self.response_mode)
        return to.refuse(error, description)

    @property
    def resume_key(self) -> str:
        """The :func:`resume_key` of the query that resumes it."""
        return resume_key(urlencode(self.parameters()))


def requested_client_id(params: Mapping[str, Sequence[str]]) -> str:
    """The ``client_id`` an authorization request names, once; raises
    :class:`NotRedirectable`."""
    client_id = _single(params, "client_id")
    if not client_id:
        raise NotRedirectable("the request names no client (client_id is missing)")
    return client_id


def parse_authorization_request(
    params: Mapping[str, Sequence[str]],
    client: Client | None,
) -> tuple[AuthorizationRequest, Client]:
    """Read an authorization request (each parameter with all its values, in order) of
    ``client``, the client its :func:`requested_client_id` names (None: none is registered);
    raises :class:`NotRedirectable` or :class:`AuthorizationRefused`."""
    client, redirect_uri = _redirectable(params, client)
    to = _answer_to(params, client, redirect_uri)
    first = _single_values(params, to)
    _check_response_type(first, to)
    if AUTHORIZATION_CODE_GRANT not in client.grant_types:
        raise to.refuse("unauthorized_client", "the client may not use the authorization code flow")
    # Each parameter's check, in the order a request's faults are reported.
    request = AuthorizationRequest(
        client_id=client.client_id,
        redirect_uri=redirect_uri,
        scopes=_scopes(first, client, to),
        code_challenge=_code_challenge(first, to),
        prompt=_prompt(first, to),
        max_age=_max_age(first, to),
        nonce=_nonce(first, to),
        id_token_hint=_id_token_hint(first, to),
        response_mode=to.response_mode,
        state=to.state,
        login_hint=_login_hint(first),
        provider=_provider(first),
        resources=_resources(params, client, to),
    )
    return request, client


@attrs.frozen
class _AnswerTo:
    """Where and how a refusal is answered: the registered ``redirect_uri``, with the
    request's ``state``, in its ``response_mode``."""

    client: Client
    redirect_uri: str
    state: str | None
    response_mode: str

    def refuse(
        self, error: str, description: str, *, echo_state: bool = True
    ) -> AuthorizationRefused:
        return AuthorizationRefused(
            error,
            description,
            client=self.client,
            redirect_uri=self.redirect_uri,
            state=self.state if echo_state else None,
            response_mode=self.response_mode,
        )


def _single(params: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = params.get(name, ())
    if len(values) > 1:
        raise NotRedirectable(f"{name} is given more than once")
    return values[0] if values else None


def _redirectable(params: Mapping[str, Sequence[str]], client: Client | None) -> tuple[Client, str]:
    """The registered client and one of its redirect URIs; :class:`NotRedirectable` else."""
    client_id = requested_client_id(params)
    if client is None:
        raise NotRedirectable(f"the client {_shown(client_id)} is not registered with this service")
    redirect_uri = _single(params, "redirect_uri")
    if not redirect_uri:
        raise NotRedirectable(f"the request of the client {_shown(client_id)} has no redirect_uri")
    if not client.redirect_uri_registered(redirect_uri):
        # Both values as received: the developer compares them with the registration.
        raise NotRedirectable(
            f"the redirect_uri {_shown(redirect_uri)} is not registered for the client "
            f"{_shown(client_id)}"
        )
    return client, redirect_uri


def _answer_to(params: Mapping[str, Sequence[str]], client: Client, redirect_uri: str) -> _AnswerTo:
    """How refusals are answered: the ``state`` and ``response_mode`` given once and valid
    (else none and ``query``), then their own faults refused that way."""
    state_values = params.get("state", ())
    state = state_values[0] if len(state_values) == 1 else None
    mode_values = params.get("response_mode", ())
    response_mode = "query"
    if len(mode_values) == 1 and mode_values[0] in RESPONSE_MODES:
        response_mode = mode_values[0]
    to = _AnswerTo(client, redirect_uri, state, response_mode)
    if len(state_values) > 1:
        raise to.refuse("invalid_request", "state is given more than once")
    if state is not None and len(state) > MAX_STATE_LENGTH:
        raise to.refuse(
            "invalid_request",
            f"state is longer than {MAX_STATE_LENGTH} characters",
            echo_state=False,
        )
    if len(mode_values) > 1:
        raise to.refuse("invalid_request", "response_mode is given more than once")
    if mode_values and mode_values[0] not in RESPONSE_MODES:
        raise to.refuse("invalid_request", "response_mode must be query or form_post")
    return to


def _single_values(params: Mapping[str, Sequence[str]], to: _AnswerTo) -> dict[str, str]:
    """The value of each parameter that must not repeat, where given; refused if repeated."""
    for name in _SINGLE:
        if len(params.get(name, ())) > 1:
            raise to.refuse("invalid_request", f"{name} is given more than once")
    return {name: params[name][0] for name in _SINGLE if params.get(name)}


def _check_response_type(first: Mapping[str, str], to: _AnswerTo) -> None:
    """No request object; ``response_type`` is ``code``."""
    if "request" in first:
        raise to.refuse("request_not_supported", "request objects are not supported")
    if "request_uri" in first:
        raise to.refuse("request_uri_not_supported", "request_uri is not supported")
    response_type = first.get("response_type")
    if not response_type:
        raise to.refuse("invalid_request", "response_type is missing")
    if response_type != "code":
        raise to.refuse(
            "unsupported_response_type", "only the authorization code flow (code) is served"
        )


def _scopes(first: Mapping[str, str], client: Client, to: _AnswerTo) -> tuple[str, ...]:
    """The scopes asked that the provider serves, each once, in order, each allowed to the
    client. The OpenID Connect scopes, and an API's own that the client's ``allowed_scopes``
    name (``mcp:tools``: the access token carries it to the resource server); others
    (address, a scope the client is not registered for) are ignored, as OpenID Connect Core
    3.1.2.1 asks. With ``openid``, an OpenID Connect request (an ID token); without it, a
    plain OAuth 2.0 request for an API's scopes (an MCP client's, RFC 6749 section 4.1),
    which must then name at least one of them."""
    asked = dict.fromkeys(first.get("scope", "").split())
    scopes = tuple(s for s in asked if s in SUPPORTED_SCOPES or s in client.allowed_scopes)
    if OPENID not in scopes and not any(s not in SUPPORTED_SCOPES for s in scopes):
        raise to.refuse(
            "invalid_scope", "scope must include openid, or an API's scope the client may have"
        )
    refused = [s for s in scopes if s not in client.allowed_scopes]
    if refused:
        raise to.refuse("invalid_scope", "scope not allowed for this client: " + " ".join(refused))
    return scopes


def _resources(
    params: Mapping[str, Sequence[str]], client: Client, to: _AnswerTo
) -> tuple[str, ...]:
    """The resource servers asked for (RFC 8707), each once, in order; ``invalid_target``
    for one the client is not registered for."""
    resources = tuple(dict.fromkeys(params.get(RESOURCE, ())))
    problem = resources_problem(client, resources)
    if problem is not None:
        raise to.refuse(INVALID_TARGET, problem)
    return resources


def resources_problem(client: Client, resources: Sequence[str]) -> str | None:
    """Why ``client`` may not have access tokens for ``resources`` (RFC 8707 resource
    indicators), or None when it may: each an absolute URI without a fragment, registered in
    the client's ``resources``."""
    for resource in resources:
        problem = resource_problem(resource)
        if problem is not None:
            return f"the resource {_shown(resource)} {problem}"
        if resource not in client.resources:
            return f"the resource {_shown(resource)} is not registered for this client"
    return None


def _code_challenge(first: Mapping[str, str], to: _AnswerTo) -> str:
    """The PKCE challenge: required, and S256."""
    method = first.get("code_challenge_method")
    challenge = first.get("code_challenge")
    if not challenge:
        raise to.refuse("invalid_request", "PKCE is required: code_challenge is missing")
    if method != "S256":
        raise to.refuse("invalid_request", "PKCE is required with code_challenge_method S256")
    if not _S256_CHALLENGE.fullmatch(challenge):
        raise to.refuse("invalid_request", "code_challenge is not an S256 challenge")
    return challenge


def _prompt(first: Mapping[str, str], to: _AnswerTo) -> frozenset[str]:
    prompt = frozenset(first.get("prompt", "").split())
    if PROMPT_NONE in prompt and len(prompt) > 1:
        raise to.refuse("invalid_request", "prompt none cannot be combined with other values")
    return prompt


def _max_age(first: Mapping[str, str], to: _AnswerTo) -> int | None:
    if "max_age" not in first:
        return None
    text = first["max_age"]
    if not _MAX_AGE.fullmatch(text):
        raise to.refuse("invalid_request", "max_age must be a number of seconds")
    return min(int(text), MAX_MAX_AGE)


def _nonce(first: Mapping[str, str], to: _AnswerTo) -> str | None:
    nonce = first.get("nonce")
    if nonce is not None and (
        not nonce or len(nonce) > MAX_NONCE_LENGTH or has_control_characters(nonce)
    ):
        raise to.refuse(
            "invalid_request",
            f"nonce must be 1 to {MAX_NONCE_LENGTH} characters without control characters",
        )
    return nonce


def _id_token_hint(first: Mapping[str, str], to: _AnswerTo) -> str | None:
    id_token_hint = first.get("id_token_hint") or None
    if id_token_hint is not None and len(id_token_hint) > MAX_ID_TOKEN_HINT_LENGTH:
        raise to.refuse("invalid_request", "id_token_hint is too long")
    return id_token_hint


def _login_hint(first: Mapping[str, str]) -> str | None:
    """A hint is only a hint: one that cannot be used is dropped, never an error."""
    login_hint = first.get("login_hint") or None
    if login_hint is not None and (
        len(login_hint) > MAX_LOGIN_HINT_LENGTH or has_control_characters(login_hint)
    ):
        return None
    return login_hint


def _provider(first: Mapping[str, str]) -> str | None:
    """authgate's ``provider``: like a hint, one that cannot be a provider's name is dropped."""
    provider = first.get(PROVIDER_PARAMETER)
    return provider if provider is None or _PROVIDER_NAME.fullmatch(provider) else None


def resume_key(query: str) -> str:
    """A digest (128 bits, base64url) of the query that resumes an authorization request
    after the sign-in it started: the session that sign-in issues carries it, signed, so that
    only that request is resumed by it."""
    digest = hashlib.sha256(query.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def resume_needs_fresh_login(url: str) -> bool:
    """Whether the authorization request that ``url`` resumes asks for a fresh login
    (:attr:`AuthorizationRequest.needs_fresh_login`): its sign-in then makes the provider log
    the person in again."""
    query = parse_qsl(urlsplit(url).query)
    return any(
        (name == "prompt" and PROMPT_LOGIN in value.split()) or name == "max_age"
        for name, value in query
    )


def _shown(value: str) -> str:
    """A value from the request in an error's text: quoted, control characters escaped (it
    reaches a log line as well as the page), bounded."""
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."
