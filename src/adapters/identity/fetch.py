"""HTTP calls to a provider: bounded in time and size, JSON objects only, log-safe failures.

Failure texts name what was called and what went wrong, never a URL's query, a body, a code,
a token or a secret: they end up in logs.

A call to the token endpoint is made once per sign-in, so what ``request_json`` does around
aiohttp is kept small: the timeout object is shared per duration, the form is encoded without
urllib's quoting of every character (a value with nothing to quote is taken as it is, one that
needs quoting is quoted once by ``str.translate`` and remembered), and a body
that arrived with the headers (the usual small JSON answer) is taken at once instead of through
a read loop.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

import aiohttp
import attrs

FORM = "application/x-www-form-urlencoded"

# quote / quote_plus (safe="") of an ASCII text, character by character: urllib.parse's
# always-safe characters stay, every other character becomes %XX (upper-case hex), except a
# space, "+" for quote_plus.
_NOT_ALWAYS_SAFE = re.compile(r"[^A-Za-z0-9_.~-]")
_QUOTE = {chr(c): f"%{c:02X}" for c in range(128) if _NOT_ALWAYS_SAFE.fullmatch(chr(c))}
_QUOTE_PLUS = {**_QUOTE, " ": "+"}


def provider_session() -> aiohttp.ClientSession:
    """The HTTP client session for the providers' endpoints (the caller closes it).

    aiohttp's defaults otherwise: certificates verified, connections kept alive (per host, for
    the JWKS, token and userinfo endpoints), no environment proxy. No cookie jar: no provider
    endpoint the service calls needs cookies, and a jar shared by every sign-in would send one
    user's provider cookies with the next user's token request (and filter them per call).
    """
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
    params: Mapping[str, str] | None = None,
    data: Mapping[str, str] | None = None,
) -> JsonResponse:
    """Call ``url`` and parse the answer as JSON.

    Raises :class:`FetchError` on a transport failure, a timeout or an oversized body. The
    status is not checked here (an OAuth error answer is JSON with a 4xx status); a body that
    is not JSON gives ``body=None``.
    """
    timeout = _timeout(timeout_seconds)
    sent = {"Accept": "application/json", **headers} if headers else _ACCEPT_JSON.copy()
    body: bytes | None = None
    if data is not None:
        # The bytes and type aiohttp's FormData would send, without building its multipart
        # writer and payload look-ups on every call (a token request per sign-in).
        body = form_encode(data).encode()
        sent.setdefault("Content-Type", FORM)
    try:
        async with session.request(
            method,
            url,
            headers=sent,
            params=params,
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
    return JsonResponse(status=status, body=_parse(raw))


_ACCEPT_JSON = {"Accept": "application/json"}


@functools.lru_cache(maxsize=16)
def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    """The (immutable) timeout of a call, one per duration: providers share a few durations."""
    return aiohttp.ClientTimeout(total=seconds)


def form_encode(data: Mapping[str, str]) -> str:
    """``urllib.parse.urlencode(data)`` (quote_plus, UTF-8), byte for byte, replacing only the
    ASCII characters that need it instead of urllib's quoting of every character."""
    return "&".join(f"{_quoted_plus(name)}={_quoted_plus(value)}" for name, value in data.items())


def query_encode(pairs: Iterable[tuple[str, str]]) -> str:
    """``urllib.parse.urlencode(pairs, quote_via=quote)`` (a space as %20), byte for byte, the
    same way as :func:`form_encode`."""
    return "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in pairs)


def _quoted_plus(text: str) -> str:
    if not text.isascii():
        return quote_plus(text)
    if _NOT_ALWAYS_SAFE.search(text) is None:  # a code, a state, a verifier: as it is
        return text
    return _cached(_QUOTED_PLUS, text, _QUOTE_PLUS_TABLE)


def _quoted(text: str) -> str:
    if not text.isascii():
        return quote(text, safe="")
    if _NOT_ALWAYS_SAFE.search(text) is None:
        return text
    return _cached(_QUOTED, text, _QUOTE_TABLE)


# What needs quoting is mostly configuration (the redirect URI, the scopes, a client id), the
# same on every sign-in: quoted once (str.translate), kept in a small table that is emptied
# when full, so values a caller chose cannot grow it.
_QUOTE_TABLE = {ord(c): q for c, q in _QUOTE.items()}
_QUOTE_PLUS_TABLE = {ord(c): q for c, q in _QUOTE_PLUS.items()}
_QUOTED: dict[str, str] = {}
_QUOTED_PLUS: dict[str, str] = {}
_CACHED_MAX = 256
_CACHED_LENGTH = 2048


def _cached(cache: dict[str, str], text: str, table: dict[int, str]) -> str:
    quoted = cache.get(text)
    if quoted is None:
        quoted = text.translate(table)
        if len(text) <= _CACHED_LENGTH:
            if len(cache) >= _CACHED_MAX:
                cache.clear()
            cache[text] = quoted
    return quoted


async def _read_bounded(response: aiohttp.ClientResponse, max_bytes: int, what: str) -> bytes:
    if response.content_length is not None and response.content_length > max_bytes:
        raise FetchError(f"{what} answered more than {max_bytes} bytes")
    content = response.content
    if content.is_eof():  # the whole body came with the headers: no read loop
        raw = content.read_nowait()
        if len(raw) > max_bytes:
            raise FetchError(f"{what} answered more than {max_bytes} bytes")
        return raw
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"{what} answered more than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def oauth_error_code(body: Any) -> str | None:
    """The ``error`` of an OAuth error answer when it looks like one (a short code)."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, str) and 0 < len(error) <= 64 and _is_code(error):
            return error
    return None


def _is_code(text: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "_-.") for c in text)


__all__ = [
    "FetchError",
    "JsonResponse",
    "form_encode",
    "oauth_error_code",
    "provider_session",
    "query_encode",
    "request_json",
]
