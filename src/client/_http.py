"""The HTTP session of the package's objects that call authgate: the caller's, or their own."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import aiohttp


class HttpUser:
    """Sends its requests through ``http``, an :class:`aiohttp.ClientSession` the caller
    closes, or, without one, through a session of its own: created on first use (again after
    :meth:`close`) and closed by :meth:`close`, which leaving ``async with`` calls."""

    def __init__(self, http: aiohttp.ClientSession | None) -> None:
        self._http = http
        self._own_http = http is None

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None or (self._own_http and self._http.closed):
            self._http = aiohttp.ClientSession()
        return self._http

    async def close(self) -> None:
        """Close the HTTP session this object created (not one passed in)."""
        if self._own_http and self._http is not None:
            await self._http.close()
            self._http = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
