"""Errors an operation (or the layer itself) answers with, and their JSON rendering."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs
from aiohttp import web

JSON_CONTENT_TYPE = "application/json"


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON response from an already-unstructured body (dicts, lists, scalars)."""
    return web.Response(
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        status=status,
        content_type=JSON_CONTENT_TYPE,
        headers=headers,
    )


class HttpError(Exception):
    """An answer other than success: a status, a JSON body and optional headers.

    Raising it from an operation (or a validator, or a security scheme) stops the request with
    exactly this response; it is an expected outcome, so it is not logged as a failure.
    """

    def __init__(
        self,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status, dict(body))
        self.status = status
        self.body: dict[str, Any] = dict(body)
        self.headers: dict[str, str] = dict(headers or {})

    def response(self) -> web.Response:
        return json_response(self.body, self.status, self.headers)


def layer_error(status: int, text: str, headers: Mapping[str, str] | None = None) -> HttpError:
    """An error of the generic layer: the body is ``{"error": text}`` (spec 2.6)."""
    return HttpError(status, {"error": text}, headers)


@attrs.frozen
class ErrorBody:
    """The documented shape of every error answer: a code or text, and an optional message."""

    error: str
    message: str | None = None
