"""HTTP calls to a provider: bounded in time and size, JSON only, timed for the metrics port.

Failure texts name what was called and what went wrong, never a URL's query, a body, a code,
a token or a secret: they end up in logs.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import aiohttp
import attrs

from authgate.ports.metrics import Metrics, ProviderCall

FORM = "application/x-www-form-urlencoded"


def provider_session() -> aiohttp.ClientSession:
    """The HTTP client session for the providers' endpoints (the caller closes it), on
    aiohttp's defaults but without a cookie jar: no provider endpoint needs cookies, and a jar
    shared by every sign-in would send one user's provider cookies with the next user's token
    request."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


class FetchError(Exception):
    """A provider call failed; the text is safe to log."""


@attrs.frozen
class JsonResponse:
    status: int
    body: Any  # the parsed JSON value, or None when the body is not JSON


async def request_json(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    what: str,
    timeout_seconds: float,
    max_bytes: int,
    headers: Mapping[str, str] | None = None,
    data: Mapping[str, str] | None = None,
) -> JsonResponse:
    """Call ``url`` and parse the answer as JSON (``body=None`` when it is not), whatever the
    status (an OAuth error answer is JSON with a 4xx status). Raises :class:`FetchError` on a
    transport failure, a timeout or an oversized body."""
    timeout = _timeout(timeout_seconds)
    sent = {"Accept": "application/json", **headers} if headers else _ACCEPT_JSON.copy()
    body: bytes | None = None
    if data is not None:
        body = urlencode(data).encode()
        sent.setdefault("Content-Type", FORM)
    try:
        async with session.request(
            method,
            url,
            headers=sent,
            data=body,
            timeout=timeout,
            allow_redirects=False,  # an endpoint that redirects is misconfigured or hijacked
        ) as response:
            raw = await _read_bounded(response, max_bytes, what)
            status = response.status
    except TimeoutError:
        raise FetchError(f"{what} did not answer within {timeout_seconds:g} s") from None
    except aiohttp.ClientError as e:
        raise FetchError(f"{what} could not be reached ({type(e).__name__})") from None
    try:
        return JsonResponse(status, json.loads(raw))
    except (ValueError, RecursionError):
        return JsonResponse(status, None)


_ACCEPT_JSON = {"Accept": "application/json"}


@functools.lru_cache(maxsize=16)
def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    """The (immutable) timeout of a call, one per duration: providers share a few durations."""
    return aiohttp.ClientTimeout(total=seconds)


async def _read_bounded(response: aiohttp.ClientResponse, max_bytes: int, what: str) -> bytes:
    if response.content_length is not None and response.content_length > max_bytes:
        raise FetchError(f"{what} answered more than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"{what} answered more than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def oauth_error_code(body: Any) -> str | None:
    """The ``error`` of an OAuth error answer when it looks like one (a short code)."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, str) and 0 < len(error) <= 64 and _is_code(error):
            return error
    return None


def _is_code(text: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "_-.") for c in text)


class ProviderCallTimer:
    """Times one provider call and reports it; failed when it raises or ``ok`` is cleared."""

    __slots__ = ("_call", "_metrics", "_provider", "_started", "ok")

    def __init__(self, metrics: Metrics, provider: str, call: ProviderCall) -> None:
        self._metrics, self._provider, self._call = metrics, provider, call
        self._started = 0.0
        self.ok = True

    def __enter__(self) -> ProviderCallTimer:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        seconds = time.perf_counter() - self._started
        self._metrics.provider_call(self._provider, self._call, seconds, self.ok and kind is None)


@attrs.frozen
class ProviderHttp:
    """The calls of one provider: on the shared session, within the time and size bounds of
    its settings, timed for the metrics under its name."""

    name: str
    session: aiohttp.ClientSession
    timeout_seconds: float
    max_bytes: int
    metrics: Metrics

    async def call(
        self,
        method: str,
        url: str,
        what: str,
        failure: Callable[[str], Exception],
        *,
        headers: Mapping[str, str] | None = None,
        data: Mapping[str, str] | None = None,
    ) -> JsonResponse:
        """:func:`request_json` within the provider's bounds, a :class:`FetchError` raised as
        ``failure`` of its log-safe text."""
        try:
            return await request_json(
                self.session,
                method,
                url,
                what=what,
                timeout_seconds=self.timeout_seconds,
                max_bytes=self.max_bytes,
                headers=headers,
                data=data,
            )
        except FetchError as e:
            raise failure(str(e)) from None

    def timed(self, call: ProviderCall) -> ProviderCallTimer:
        """A timer of one call of this provider (a ``with`` block)."""
        return ProviderCallTimer(self.metrics, self.name, call)


def with_query(url: str, params: Mapping[str, str]) -> str:
    """``url`` with ``params`` added to its query (replacing same-named ones), %20 for spaces."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("not an absolute http(s) URL")
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query = urlencode([*kept, *params.items()], quote_via=quote)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
