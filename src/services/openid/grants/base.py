"""What every grant of the token endpoint shares: what it is built on, the shape of its handler
and how it reads the form's parameters."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

import attrs

from authgate.domain.openid.clients import Client
from authgate.domain.openid.refusals import OAuthInvalidRequest
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
