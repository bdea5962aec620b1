"""HTTP calls to a provider: bounded in time and size, JSON objects only, log-safe failures.

Failure texts name what was called and what went wrong, never a URL's query, a body, a code,
a token or a secret: they end up in logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
import attrs

FORM = "application/x-www-form-urlencoded"


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
    timeout = aiohttp.ClientTimeout(total=timeout_seconds)
    sent = {"Accept": "application/json", **(headers or {})}
    body: bytes | None = None
    if data is not None:
        # The bytes and type aiohttp's FormData would send, without building its multipart
        # writer and payload look-ups on every call (a token request per sign-in).
        body = urlencode(data).encode()
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


__all__ = ["FetchError", "JsonResponse", "oauth_error_code", "request_json"]
