"""What every grant of the token endpoint shares: what it is built on, the shape of its handler
and how it reads the form's parameters."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from authgate.domain.openid.authorization_request import resources_problem
from authgate.domain.openid.clients import Client
from authgate.domain.openid.refusals import InvalidTarget, OAuthInvalidRequest
from authgate.ports.clock import Clock
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.openid.issuing import IssuedTokens, TokenIssuer

security_log = logging.getLogger("authgate.security")

MAX_PARAMETER_LENGTH = 4096


@attrs.frozen
class GrantContext:
    """What a grant is built on: the signer of the tokens, the stores and the clock."""

    issuer: TokenIssuer
    units: UnitOfWork
    clock: Clock


class Grant(Protocol):
    """One ``grant_type`` of the token endpoint: the token response for the form of a request
    of an authenticated client, or an :class:`~authgate.domain.openid.refusals.OAuthError`."""

    async def __call__(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The token response for ``form`` (each field once) from ``client``."""
        ...


def required(form: Mapping[str, str], name: str) -> str:
    """The form's ``name``, present, non-empty and not unreasonably long; raises
    :class:`~authgate.domain.openid.refusals.OAuthInvalidRequest`."""
    value = form.get(name)
    if not value:
        raise OAuthInvalidRequest(f"{name} is missing")
    if len(value) > MAX_PARAMETER_LENGTH:
        raise OAuthInvalidRequest(f"{name} is too long")
    return value


class TokenForm(dict[str, str]):
    """A token request's fields, each given once, with the RFC 8707 ``resource`` values apart
    (the one field that may be repeated), in order, each once."""

    def __init__(self, fields: Mapping[str, str], resources: Iterable[str] = ()) -> None:
        super().__init__(fields)
        self.resources = tuple(dict.fromkeys(resources))


def requested_resources(client: Client, form: Mapping[str, str]) -> tuple[str, ...]:
    """The resource servers the request names (RFC 8707), each registered for ``client``;
    raises :class:`~authgate.domain.openid.refusals.InvalidTarget`."""
    if isinstance(form, TokenForm):
        resources = form.resources
    else:
        resource = form.get("resource")
        resources = (resource,) if resource else ()
    problem = resources_problem(client, resources)
    if problem is not None:
        raise InvalidTarget(problem, f"client {client.client_id!r}: {problem}")
    return resources


def narrowed_resources(
    client: Client, form: Mapping[str, str], granted: tuple[str, ...]
) -> tuple[str, ...]:
    """The resource servers a token issued under a grant for ``granted`` is for: those the
    request names, when all are among ``granted`` (narrowing, never widening), else all of
    ``granted``; raises :class:`~authgate.domain.openid.refusals.InvalidTarget`."""
    asked = requested_resources(client, form)
    if not asked:
        return granted
    wider = [r for r in asked if r not in granted]
    if wider:
        raise InvalidTarget(
            "a resource may only narrow what was granted",
            f"client {client.client_id!r}: resource {wider[0][:80]!r} was not granted",
        )
    return asked
