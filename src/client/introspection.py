"""Asking authgate whether a session is still live (RFC 7662 token introspection), for back
ends that must see a revocation at once rather than when the token expires.

With an :class:`Introspection` given to :class:`~authgate.client.SessionVerifier`, a token
that verifies is also sent to authgate's ``/oauth2/introspect`` (``client_secret_basic``) and
refused when authgate says it is not active. The answers are cached (docs/integration.md):
"active" for ``cache_seconds``, "not active" until the token would have expired anyway (a
revoked session never comes back), at most ``max_entries`` of them, least recently used dropped
first, keyed by the token's SHA-256, never the token; concurrent checks of one token share one
request.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import hashlib
import json
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

from ._http import HttpUser

log = logging.getLogger("authgate.client")

INTROSPECTION_PATH = "/oauth2/introspect"
MAX_ANSWER_BYTES = 64 * 1024
# An active token's description, or None for "not active".
Answer = Mapping[str, Any] | None


class IntrospectionUnavailable(Exception):
    """authgate's introspection endpoint could not say whether a token is active. The text
    is safe to log (never the token or the secret)."""


def _basic(client_id: str, client_secret: str) -> str:
    # RFC 6749 section 2.3.1: each form-urlencoded before the Basic encoding.
    pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


class Introspection(HttpUser):
    """authgate's introspection endpoint, with a short cache of its answers.

    ``url``: authgate's ``/oauth2/introspect`` (or use :meth:`for_service` with its base URL).
    ``client_id``, ``client_secret``: an application registered with ``introspection: true``.
    ``fail_open``: when authgate cannot be asked (unreachable, a 5xx, a refusal of the
    credentials), trust the locally verified token (logged) instead of raising
    :class:`IntrospectionUnavailable`. ``http``: as :class:`~authgate.client._http.HttpUser`.
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str,
        client_secret: str,
        cache_seconds: float = 15.0,
        max_entries: int = 10_000,
        timeout_seconds: float = 5.0,
        fail_open: bool = False,
        http: aiohttp.ClientSession | None = None,
    ) -> None:
        if cache_seconds < 0 or max_entries < 1:
            raise ValueError("cache_seconds must be >= 0 and max_entries >= 1")
        self.url = url
        self._authorization = _basic(client_id, client_secret)
        self._cache_seconds = cache_seconds
        self._max_entries = max_entries
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._fail_open = fail_open
        super().__init__(http)
        # SHA-256 of the token -> (the answer of an active token, None for "not active";
        # monotonic time until which the answer holds)
        self._answers: collections.OrderedDict[bytes, tuple[Answer, float]] = (
            collections.OrderedDict()
        )
        self._asking: dict[bytes, asyncio.Future[Answer]] = {}
        self.requests = 0  # answers fetched from authgate, for observation

    @classmethod
    def for_service(cls, base_url: str, **kwargs: Any) -> Introspection:
        """The introspection endpoint of the authgate at ``base_url``."""
        return cls(base_url.rstrip("/") + INTROSPECTION_PATH, **kwargs)

    async def active(self, token: str, expires_in_seconds: float | None = None) -> bool:
        """Whether authgate says ``token`` is active (cached, see the module's text).
        ``expires_in_seconds``: how long until the token expires, which bounds how long a
        "not active" answer is kept. Raises :class:`IntrospectionUnavailable` (unless
        ``fail_open``)."""
        return await self.answer(token, expires_in_seconds) is not None

    async def answer(
        self, token: str, expires_in_seconds: float | None = None
    ) -> Mapping[str, Any] | None:
        """authgate's description of ``token`` when it is active (``active``, ``aud``,
        ``scope``...), None when it is not; cached as :meth:`active` is. With ``fail_open``
        and authgate unreachable, ``{"active": True}`` alone (nothing more is known)."""
        key = hashlib.sha256(token.encode()).digest()
        now = time.monotonic()
        cached = self._answers.get(key)
        if cached is not None:
            if now < cached[1]:
                self._answers.move_to_end(key)
                return cached[0]
            del self._answers[key]
        asking = self._asking.get(key)
        if asking is not None:  # single flight: the same question is already on its way
            return await asyncio.shield(asking)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._asking[key] = future
        try:
            answer = await self._ask(token)
        except IntrospectionUnavailable as e:
            if not self._fail_open:
                _fail(future, e)
                raise
            log.warning("%s; trusting the verified token (fail_open)", e)
            trusted = {"active": True}
            future.set_result(trusted)
            return trusted
        except BaseException:
            # This caller was cancelled: the others waiting for its answer are not.
            _fail(future, IntrospectionUnavailable(f"introspection at {self.url}: cancelled"))
            raise
        finally:
            del self._asking[key]
        keep = self._cache_seconds
        if answer is None:
            keep = max(keep, expires_in_seconds or 0.0)
        self._remember(key, answer, time.monotonic() + keep)
        future.set_result(answer)
        return answer

    def _remember(self, key: bytes, answer: Answer, until: float) -> None:
        self._answers[key] = (answer, until)
        self._answers.move_to_end(key)
        while len(self._answers) > self._max_entries:
            self._answers.popitem(last=False)

    async def _ask(self, token: str) -> Answer:
        self.requests += 1
        try:
            async with self._client().post(
                self.url,
                data={"token": token},
                headers={"Authorization": self._authorization, "Accept": "application/json"},
                timeout=self._timeout,
                allow_redirects=False,
            ) as response:
                body = await response.content.read(MAX_ANSWER_BYTES + 1)
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as e:
            raise IntrospectionUnavailable(
                f"introspection at {self.url}: {type(e).__name__}: {e}"
            ) from None
        if status != 200:
            raise IntrospectionUnavailable(f"introspection at {self.url}: HTTP {status}")
        if len(body) > MAX_ANSWER_BYTES:
            raise IntrospectionUnavailable(f"introspection at {self.url}: answer too large")
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        active = document.get("active") if isinstance(document, dict) else None
        if not isinstance(active, bool):
            raise IntrospectionUnavailable(f"introspection at {self.url}: no boolean active")
        return document if active else None


def _fail(future: asyncio.Future[Answer], error: IntrospectionUnavailable) -> None:
    """Hand ``error`` to whoever waits on ``future`` (marked retrieved: nobody need wait)."""
    future.set_exception(error)
    future.exception()


__all__ = ["Introspection", "IntrospectionUnavailable"]
