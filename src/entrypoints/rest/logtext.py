"""Request values as they may appear in a log line: control characters escaped; and the
request's start as the access log measures it.

A decoded path, a header or a parameter can carry any character. Written to a log as is, a
newline (``%0A`` in a path) forges a whole line, a carriage return or an ANSI sequence
(``%1B``) rewrites what a terminal shows, and U+2028/U+2029 break lines in some viewers.
"""

from __future__ import annotations

import re

from aiohttp import web

REQUEST_STARTED = web.RequestKey("authgate.rest.started", float)
"""The request's key for when the error handling began with it (``time.perf_counter``): the
access log's duration. aiohttp's own measures ``loop.time()``, which uvloop keeps in whole
milliseconds per loop iteration."""

# C0 controls, DEL, C1 controls, the Unicode line and paragraph separators, lone surrogates
# (undecodable bytes kept by surrogateescape, which a UTF-8 log stream cannot encode) and the
# backslash itself, so that an escape in the log always means an escaped character.
_UNSAFE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def log_safe(value: str) -> str:
    """``value`` with every control character backslash-escaped (``\\n``, ``\\x1b``,
    ``\\u2028``; a backslash as ``\\\\``), so that it stays on its log line and shows as text:
    for every request-derived value a log line carries."""
    # Most values have nothing to escape: answer them without building a new string. For ASCII
    # text, isprintable() is false exactly for the C0 controls and DEL; the backslash is the
    # one other character to escape (two C-speed checks instead of a regular expression).
    if value.isascii() and value.isprintable() and "\\" not in value:
        return value
    return _UNSAFE.sub(_escape, value) if _UNSAFE.search(value) else value
