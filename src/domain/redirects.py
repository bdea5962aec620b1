"""Where the browser may be sent after sign-in: never an open redirect."""

from __future__ import annotations

import re
from collections.abc import Collection
from urllib.parse import quote, urlsplit

MAX_RETURN_TO_LENGTH = 1024
# A resumed authorization request carries the whole request in its query.
MAX_RESUME_LENGTH = 4096
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL or an ``Origin`` header, lower case, without user-info
    and without the scheme's default port (browsers never send it; a configured URL may)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = parts.netloc.lower().rpartition("@")[2]
    netloc = netloc.removesuffix({"http": ":80", "https": ":443"}.get(scheme, ""))
    return f"{scheme}://{netloc}"


def app_url_for(app_url: str, path: str) -> str:
    """An address on the application: its base URL joined with a path."""
    return app_url.rstrip("/") + "/" + path.lstrip("/")


def safe_return_to(
    value: str | None, app_url: str, resume_urls: Collection[str] = ()
) -> str | None:
    """The absolute destination for a requested ``return_to``, or None to ignore it: a path
    on the application, an absolute URL on its origin, or a :func:`is_resume_url`. Refused:
    other origins, ``//host``, backslashes (``/\\host`` is ``//host`` to browsers), control
    characters (CR/LF header injection), user-info, and anything over
    :data:`MAX_RETURN_TO_LENGTH`. Non-ASCII is percent-encoded: a ``Location`` is ASCII."""
    if not value or "\\" in value or any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in value):
        return None
    value = _NON_ASCII.sub(lambda m: quote(m.group(), safe="", errors="replace"), value)
    if resume_urls and is_resume_url(value, resume_urls):
        return value
    if len(value) > MAX_RETURN_TO_LENGTH:
        return None
    if value.startswith("/"):
        if value.startswith("//"):
            return None
        return app_url_for(app_url, value)
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https") or "@" in parts.netloc:
        return None
    if origin(value) != origin(app_url):
        return None
    return value


def is_resume_url(value: str, resume_urls: Collection[str]) -> bool:
    """Whether ``value`` is one of ``resume_urls`` with any query added (no user-info,
    fragment, white space or control character; at most :data:`MAX_RESUME_LENGTH`)."""
    if len(value) > MAX_RESUME_LENGTH or "\\" in value:
        return False
    if any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in value):
        return False
    parts = urlsplit(value)
    if parts.fragment or "#" in value or "@" in parts.netloc:
        return False
    return f"{parts.scheme}://{parts.netloc}{parts.path}" in resume_urls
