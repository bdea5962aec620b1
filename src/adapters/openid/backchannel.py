"""The clients' back-channel logout endpoints, over the service's HTTP client session.

A logout token is POSTed as the form field ``logout_token`` (Back-Channel Logout 1.0 section
2.5); any 2xx confirms it (the specification asks for 200, and some frameworks send 204). No
redirect is followed: the token must reach the registered address only. Failure texts never
name the token.
"""

from __future__ import annotations

from urllib.parse import urlencode

import aiohttp

from authgate.ports.openid import LogoutDeliveryFailed

FORM = "application/x-www-form-urlencoded"
# What is read of an answer: nothing is needed from it, and a client must not make the worker
# hold a large body.
MAX_ANSWER_BYTES = 8 * 1024


class HttpLogoutTokenSender:
    """:class:`~authgate.ports.openid.LogoutTokenSender` on an aiohttp client session (None:
    this process sends nothing, as for the OpenAPI document's resources)."""

    def __init__(self, session: aiohttp.ClientSession | None, *, timeout_seconds: float) -> None:
        self._session = session
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._timeout_seconds = timeout_seconds

    async def send(self, uri: str, logout_token: str) -> None:
        if self._session is None:
            raise LogoutDeliveryFailed("this process sends nothing")
        body = urlencode({"logout_token": logout_token}).encode("ascii")
        try:
            async with self._session.post(
                uri,
                data=body,
                headers={"Content-Type": FORM, "Accept": "*/*"},
                timeout=self._timeout,
                allow_redirects=False,
            ) as answer:
                await answer.content.read(MAX_ANSWER_BYTES)
                status = answer.status
        except TimeoutError:
            raise LogoutDeliveryFailed(f"no answer within {self._timeout_seconds:g} s") from None
        except aiohttp.ClientError as e:
            raise LogoutDeliveryFailed(f"could not be reached ({type(e).__name__})") from None
        if not 200 <= status < 300:
            raise LogoutDeliveryFailed(f"answered HTTP {status}")
