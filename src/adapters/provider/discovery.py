"""A provider's endpoints: explicit configuration, completed by OpenID Connect discovery,
fetched on first use, cached for ``discovery_max_age_seconds`` (the last good document kept
when a fetch fails), retried after ``discovery_retry_seconds``; callers share one fetch.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import attrs

from authgate.adapters.http_fetch import ProviderHttp
from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.errors import ProviderUnavailable
from authgate.ports.clock import Clock

log = logging.getLogger("authgate.identity")

WELL_KNOWN = "/.well-known/openid-configuration"


@attrs.frozen
class Endpoints:
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str | None
    userinfo_endpoint: str | None
    revocation_endpoint: str | None = None
    """RFC 7009 (configured, or the discovery document's): where tokens are revoked."""
    response_iss_supported: bool = False
    """RFC 9207: the discovery document has ``authorization_response_iss_parameter_supported:
    true`` (every authorization response carries ``iss``). False for explicit endpoints."""


def explicit_endpoints(settings: ProviderSettings) -> Endpoints | None:
    """The endpoints when configuration names every one needed, else None (discovery)."""
    if settings.authorization_endpoint is None or settings.token_endpoint is None:
        return None
    if settings.uses_id_token and settings.jwks_uri is None:
        return None
    return Endpoints(
        authorization_endpoint=settings.authorization_endpoint,
        token_endpoint=settings.token_endpoint,
        jwks_uri=settings.jwks_uri,
        userinfo_endpoint=settings.userinfo_endpoint,
        revocation_endpoint=settings.revocation_endpoint,
    )


class EndpointResolver:
    """Resolves (and caches) the endpoints of one provider."""

    def __init__(self, settings: ProviderSettings, http: ProviderHttp, clock: Clock) -> None:
        self._settings = settings
        self._http = http
        self._clock = clock
        self._explicit = explicit_endpoints(settings)
        self._cached: Endpoints | None = None
        self._fetched_at: dt.datetime | None = None
        self._failed_at: dt.datetime | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Endpoints:
        """The endpoints; raises ProviderUnavailable when discovery cannot be loaded."""
        if self._explicit is not None:
            return self._explicit
        if self._cached is not None and not self._stale():
            return self._cached
        async with self._lock:  # single flight: the others find the fresh document
            if self._cached is not None and not self._stale():
                return self._cached
            now = self._clock.now()
            if self._failed_at is not None and self._seconds_since(self._failed_at) < (
                self._settings.discovery_retry_seconds
            ):
                if self._cached is not None:
                    return self._cached
                raise ProviderUnavailable(
                    f"provider {self._settings.name}: discovery failed recently"
                )
            try:
                with self._http.timed("discovery"):
                    endpoints = await self._discover()
            except ProviderUnavailable as e:
                self._failed_at = now
                if self._cached is not None:
                    log.warning("%s; keeping the discovery document fetched before", e)
                    return self._cached
                raise
            self._cached, self._fetched_at, self._failed_at = endpoints, now, None
            return endpoints

    async def get_or(self, failure: Callable[[str], Exception]) -> Endpoints:
        """:meth:`get`, ProviderUnavailable raised as ``failure`` of its text."""
        try:
            return await self.get()
        except ProviderUnavailable as e:
            raise failure(str(e)) from None

    def _stale(self) -> bool:
        assert self._fetched_at is not None
        return self._seconds_since(self._fetched_at) >= self._settings.discovery_max_age_seconds

    def _seconds_since(self, then: dt.datetime) -> float:
        return (self._clock.now() - then).total_seconds()

    async def _discover(self) -> Endpoints:
        settings = self._settings
        what = f"provider {settings.name}: discovery"
        document = await self._document(what)
        assert settings.issuer is not None
        secure = urlsplit(settings.issuer).scheme == "https"

        def endpoint(key: str, explicit: str | None, required: bool) -> str | None:
            if explicit is not None:
                return explicit
            value: Any = document.get(key)
            if value is None and not required:
                return None
            if not isinstance(value, str) or not _is_url(value, secure):
                raise ProviderUnavailable(f"{what}: {key} is missing or not an acceptable URL")
            return value

        authorization = endpoint("authorization_endpoint", settings.authorization_endpoint, True)
        token = endpoint("token_endpoint", settings.token_endpoint, True)
        assert authorization is not None and token is not None
        return Endpoints(
            authorization_endpoint=authorization,
            token_endpoint=token,
            jwks_uri=endpoint("jwks_uri", settings.jwks_uri, True),
            userinfo_endpoint=endpoint("userinfo_endpoint", settings.userinfo_endpoint, False),
            revocation_endpoint=endpoint(
                "revocation_endpoint", settings.revocation_endpoint, False
            ),
            # Only the JSON value true advertises it (RFC 9207 3); anything else is "not said".
            response_iss_supported=document.get("authorization_response_iss_parameter_supported")
            is True,
        )

    async def _document(self, what: str) -> dict[str, Any]:
        """The discovery document, checked to be the configured issuer's."""
        issuer = self._settings.issuer
        assert issuer is not None
        url = issuer.rstrip("/") + WELL_KNOWN
        answer = await self._http.call("GET", url, what, ProviderUnavailable)
        if answer.status != 200:
            raise ProviderUnavailable(f"{what} answered HTTP {answer.status}")
        document = answer.body
        if not isinstance(document, dict):
            raise ProviderUnavailable(f"{what} answered a body that is not a JSON object")
        # OpenID Connect Discovery 4.3: the document's issuer is exactly the configured one.
        if document.get("issuer") != issuer:
            raise ProviderUnavailable(f"{what}: the document's issuer differs from the configured")
        return document


def _is_url(value: str, secure: bool) -> bool:
    """An absolute URL; https when the issuer is https (no downgrade through discovery)."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    allowed = ("https",) if secure else ("https", "http")
    return parts.scheme in allowed and bool(parts.netloc)
