"""Clients described by a client ID metadata document (the IETF OAuth working group's draft
"OAuth Client ID Metadata Document", which the MCP authorization specification recommends):
a ``client_id`` that is an https URL with a path names a JSON document about the client, which
the provider fetches and checks before it treats the client as registered.

Anyone can name any URL, so every fetch is bounded: only https (http on loopback outside
production), the hosts the configuration allows, never a private or otherwise internal address
(:mod:`authgate.adapters.openid.fetch_policy`, checked on the resolved addresses the connection
then uses), no redirect followed, at most ``max_bytes`` (refused while it streams) within
``timeout_seconds`` (the whole fetch, keys included), a few fetches a minute per host and in
all. One fetch serves every concurrent request naming the same URL; its outcome is kept as the
answer's caching headers say (between a floor and a ceiling), a refusal a short while. A refused
document registers no client, and its reason is logged."""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import email.utils
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import attrs
import yarl

from authgate.adapters.jose.key_sets import KeySetUnavailable, public_key_set
from authgate.adapters.openid.fetch_policy import CheckedResolver, host_address_problem
from authgate.domain.openid.clients import (
    AUTHORIZATION_CODE_GRANT,
    DEFAULT_GRANT_TYPES,
    LOOPBACK_HOSTS,
    REFRESH_TOKEN_GRANT,
    SUPPORTED_SCOPES,
    AuthMethod,
    Client,
    redirect_uri_problem,
)
from authgate.ports.clock import Clock

log = logging.getLogger("authgate.openid")

MAX_URL_LENGTH = 2048
MAX_KEY_SET_BYTES = 64 * 1024
MAX_REDIRECT_URIS = 20
MAX_CACHED = 10_000
# The methods of a client whose description is public: no secret can be in it.
DOCUMENT_AUTH_METHODS: tuple[AuthMethod, ...] = ("none", "private_key_jwt")
DOCUMENT_GRANT_TYPES = frozenset({AUTHORIZATION_CODE_GRANT, REFRESH_TOKEN_GRANT})
_SECRET_MEMBERS = ("client_secret", "client_secret_expires_at")
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d{1,10})\"?\s*(?:,|$)", re.IGNORECASE)
_NO_STORE = re.compile(r"(?:^|,)\s*(?:no-store|no-cache)\s*(?:,|=|$)", re.IGNORECASE)


@attrs.frozen
class DocumentPolicy:
    """What the provider fetches and how long it keeps it (``client_metadata_documents``)."""

    production: bool = True  # https only, public addresses only
    allowed_hosts: frozenset[str] = frozenset()
    allow_any_host: bool = False
    max_bytes: int = 5 * 1024
    timeout_seconds: float = 3.0
    min_cache_seconds: int = 60
    max_cache_seconds: int = 86400
    failure_cache_seconds: int = 0
    fetches_per_minute: int = 10  # from one host
    total_fetches_per_minute: int = 300
    # What such a client may have beyond OpenID Connect's scopes: the APIs' scopes (an MCP
    # server's, say) and the resource servers (RFC 8707) its access tokens may be for.
    scopes: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()

    def url_problem(self, url: str) -> str | None:
        """Why ``url`` cannot be a client ID metadata document's URL, or None when it can be
        fetched: :meth:`fetch_problem`'s rules, a path without . or .. segments, and a host the
        configuration allows."""
        problem = self.fetch_problem(url)
        if problem is not None:
            return problem
        parts = urlsplit(url)
        if parts.path in ("", "/") or any(s in (".", "..") for s in parts.path.split("/")):
            return "must have a path, without . or .. segments"
        host = (parts.hostname or "").lower()
        if not self.allow_any_host and host not in self.allowed_hosts:
            return f"names {host}, not a host the provider fetches client documents from"
        return None

    def fetch_problem(self, url: str) -> str | None:
        """Why the provider will not fetch ``url`` (a document's or its keys'): https (http
        on loopback outside production) with a host, no user name, fragment or white space,
        never an internal address literal (names are checked once resolved)."""
        if len(url) > MAX_URL_LENGTH or any(c.isspace() or not c.isprintable() for c in url):
            return f"must be a URL of at most {MAX_URL_LENGTH} characters without white space"
        parts = urlsplit(url)
        local = parts.scheme == "http" and _is_loopback_host(parts.hostname)
        if parts.scheme != "https" and not (local and not self.production):
            return "must be an https URL"
        if not parts.hostname or "@" in parts.netloc:
            return "must name a host (and no user name)"
        try:
            parts.port  # noqa: B018 - urlsplit checks the port only when asked
        except ValueError:
            return "has an invalid port"
        if "#" in url:
            return "must not have a fragment"
        return host_address_problem(parts.hostname, allow_loopback=not self.production)


def _is_loopback_host(hostname: str | None) -> bool:
    host = hostname or ""
    return (f"[{host}]" if ":" in host else host) in LOOPBACK_HOSTS


def is_document_url(client_id: str) -> bool:
    """Whether ``client_id`` looks like a metadata document's URL (else no source of this
    kind is asked)."""
    return client_id.startswith(("https://", "http://"))


class DocumentRefused(Exception):
    """The document cannot describe a client; the text says why and is safe to log."""


def client_of(
    url: str,
    document: Any,
    *,
    api_scopes: frozenset[str] = frozenset(),
    resources: frozenset[str] = frozenset(),
) -> tuple[Client, str | None]:
    """The client the document at ``url`` describes, and its ``jwks_uri`` when its keys are
    published there (fetched under the same policy, then kept with the client); raises
    :class:`DocumentRefused`. Its scopes are those its ``scope`` names among OpenID Connect's
    and ``api_scopes`` (all of them without ``scope``); its resources are ``resources``."""
    if not isinstance(document, dict):
        raise DocumentRefused("is not a JSON object")
    if document.get("client_id") != url:
        raise DocumentRefused("its client_id is not the URL it was fetched from")
    for member in _SECRET_MEMBERS:
        if member in document:
            raise DocumentRefused(
                f"holds {member}: a metadata document is public, so no shared secret is "
                "accepted from one"
            )
    method = document.get("token_endpoint_auth_method", "none")
    if method not in DOCUMENT_AUTH_METHODS:
        raise DocumentRefused(
            f"token_endpoint_auth_method {_short(method)} is not one of "
            f"{', '.join(DOCUMENT_AUTH_METHODS)}"
        )
    public = method == "none"
    redirect_uris = _strings(document, "redirect_uris")
    if not redirect_uris or len(redirect_uris) > MAX_REDIRECT_URIS:
        raise DocumentRefused(f"needs redirect_uris (1 to {MAX_REDIRECT_URIS} of them)")
    for uri in redirect_uris:
        problem = redirect_uri_problem(uri, native=public)
        if problem is not None:
            raise DocumentRefused(f"redirect_uri {_short(uri)} {problem}")
    post_logout = _strings(document, "post_logout_redirect_uris")
    for uri in post_logout:
        problem = redirect_uri_problem(uri, native=public)
        if problem is not None:
            raise DocumentRefused(f"post_logout_redirect_uri {_short(uri)} {problem}")
    grant_types = frozenset(_strings(document, "grant_types")) or DEFAULT_GRANT_TYPES
    if AUTHORIZATION_CODE_GRANT not in grant_types or not grant_types <= DOCUMENT_GRANT_TYPES:
        raise DocumentRefused(
            "grant_types must be authorization_code, with refresh_token or without"
        )
    response_types = _strings(document, "response_types")
    if response_types and response_types != ["code"]:
        raise DocumentRefused("response_types must be code")
    alg = document.get("id_token_signed_response_alg", "RS256")
    if alg != "RS256":
        raise DocumentRefused("id_token_signed_response_alg must be RS256")
    jwks_uri, jwks = document.get("jwks_uri"), document.get("jwks")
    if public and (jwks_uri is not None or jwks is not None):
        raise DocumentRefused("jwks_uri and jwks are the keys of private_key_jwt")
    if not public and (jwks_uri is None) == (jwks is None):
        raise DocumentRefused("private_key_jwt needs jwks_uri or jwks (one of them)")
    if jwks_uri is not None and not isinstance(jwks_uri, str):
        raise DocumentRefused("jwks_uri must be a URL")
    inline = None
    if jwks is not None:
        inline = json.dumps(_key_set(jwks))
    offered = frozenset(SUPPORTED_SCOPES) | api_scopes
    scopes = offered
    if "scope" in document:
        asked = document["scope"]
        if not isinstance(asked, str):
            raise DocumentRefused("scope must be a string of space-separated scopes")
        scopes = frozenset(s for s in asked.split() if s in offered)
        if not scopes:
            raise DocumentRefused(f"scope names none of {', '.join(sorted(offered))}")
    host = urlsplit(url).netloc.lower()
    name = document.get("client_name", host)
    if not isinstance(name, str) or not name.strip() or len(name) > 100 or not name.isprintable():
        raise DocumentRefused("client_name must be 1 to 100 printable characters")
    pages = {}
    for member in ("logo_uri", "client_uri"):
        value = document.get(member)
        if value is not None and (not isinstance(value, str) or _web_url_problem(value)):
            raise DocumentRefused(f"{member} must be an https URL")
        pages[member] = value
    client = Client(
        client_id=url,
        name=name.strip(),
        client_type="public" if public else "confidential",
        token_endpoint_auth_method=method,
        redirect_uris=tuple(redirect_uris),
        jwks=inline,
        post_logout_redirect_uris=tuple(post_logout),
        allowed_scopes=scopes,
        first_party=False,
        grant_types=grant_types,
        resources=resources,
        logo_uri=pages["logo_uri"],
        client_uri=pages["client_uri"],
        origin="metadata_document",
    )
    return client, jwks_uri


def _strings(document: Mapping[str, Any], member: str) -> list[str]:
    value = document.get(member, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DocumentRefused(f"{member} must be an array of strings")
    return value


def _web_url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or "@" in parts.netloc:
        return "must be an https URL"
    if len(url) > MAX_URL_LENGTH or any(c.isspace() or not c.isprintable() for c in url):
        return "must be a URL without white space"
    return None


def _key_set(document: Any) -> Any:
    """A JWK Set of public signature keys, as given (else :class:`DocumentRefused`)."""
    try:
        public_key_set(document, "jwks", _is_signature_key)
    except KeySetUnavailable as e:
        raise DocumentRefused(str(e)) from None
    if any(not _is_signature_key(k) for k in document["keys"]):
        raise DocumentRefused("jwks holds a key that is not a public signature key")
    return document


def _is_signature_key(jwk: Mapping[str, Any]) -> bool:
    return (
        isinstance(jwk, Mapping)
        and jwk.get("kty") in ("RSA", "EC", "OKP")
        and not any(p in jwk for p in ("d", "p", "q", "k"))
        and jwk.get("use", "sig") == "sig"
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def cache_seconds(headers: Mapping[str, str], policy: DocumentPolicy, now: dt.datetime) -> int:
    """How long a fetched document is kept: ``Cache-Control: max-age`` (no-store and
    no-cache: the floor), else ``Expires`` (against ``Date`` when given), else the floor;
    never below ``min_cache_seconds`` nor above ``max_cache_seconds``."""
    control = headers.get("Cache-Control", "")
    seconds: float = policy.min_cache_seconds
    if _NO_STORE.search(control):
        seconds = 0
    elif (match := _MAX_AGE.search(control)) is not None:
        seconds = int(match.group(1))
    elif (expires := _http_date(headers.get("Expires"))) is not None:
        base = _http_date(headers.get("Date")) or now
        seconds = (expires - base).total_seconds()
    return int(min(max(seconds, policy.min_cache_seconds), policy.max_cache_seconds))


def _http_date(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


@attrs.define
class _Entry:
    client: Client | None
    expires: dt.datetime


@attrs.define
class _Budget:
    """Fetches allowed in the last minute, per host and in all (this process's): a sliding
    window, so no minute's turn lets a burst through twice."""

    per_host: int
    total: int
    _hosts: dict[str, collections.deque[float]] = attrs.field(factory=dict)
    _all: collections.deque[float] = attrs.field(factory=collections.deque)

    def take(self, host: str) -> bool:
        now = time.monotonic()
        since = now - 60
        _drop_before(self._all, since)
        if len(self._hosts) > MAX_CACHED:
            for name in [h for h, times in self._hosts.items() if not times or times[-1] < since]:
                del self._hosts[name]
        times = self._hosts.setdefault(host, collections.deque())
        _drop_before(times, since)
        if len(times) >= self.per_host or len(self._all) >= self.total:
            return False
        times.append(now)
        self._all.append(now)
        return True


def _drop_before(times: collections.deque[float], since: float) -> None:
    while times and times[0] < since:
        times.popleft()


class MetadataDocuments:
    """:class:`~authgate.ports.openid.ClientSource` of the clients whose ``client_id`` is the
    URL of their metadata document. The HTTP client is its own (its resolver checks every
    address) and is opened on first use; :meth:`close` closes it."""

    def __init__(
        self,
        policy: DocumentPolicy,
        clock: Clock,
        *,
        resolver: aiohttp.abc.AbstractResolver | None = None,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None
        self._cache: dict[str, _Entry] = {}
        self._fetching: dict[str, asyncio.Task[_Entry]] = {}
        self._budget = _Budget(policy.fetches_per_minute, policy.total_fetches_per_minute)
        self._timeout = aiohttp.ClientTimeout(total=policy.timeout_seconds)

    async def find(self, client_id: str) -> Client | None:
        if not is_document_url(client_id):
            return None
        now = self._clock.now()
        entry = self._cache.get(client_id)
        if entry is not None and now < entry.expires:
            return entry.client
        task = self._fetching.get(client_id)
        if task is None:
            problem = self.policy.url_problem(client_id)
            if problem is not None:
                log.info("client %s not fetched: its URL %s", _short(client_id), problem)
                return None
            host = (urlsplit(client_id).hostname or "").lower()
            if not self._budget.take(host):
                log.warning(
                    "client %s not fetched: too many metadata document fetches this minute",
                    _short(client_id),
                )
                return None
            task = asyncio.create_task(self._load(client_id))
            self._fetching[client_id] = task
            task.add_done_callback(lambda _: self._fetching.pop(client_id, None))
        # Shielded: a request that gives up does not cancel the fetch the others wait on.
        return (await asyncio.shield(task)).client

    async def close(self) -> None:
        for task in list(self._fetching.values()):
            task.cancel()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _load(self, url: str) -> _Entry:
        try:
            async with asyncio.timeout(self.policy.timeout_seconds):
                client, seconds = await self._fetch_client(url)
        except DocumentRefused as e:
            log.warning("client %s refused: its metadata document %s", _short(url), e)
            client, seconds = None, self.policy.failure_cache_seconds
        except TimeoutError:
            log.warning(
                "client %s refused: its metadata document did not arrive within %g s",
                _short(url),
                self.policy.timeout_seconds,
            )
            client, seconds = None, self.policy.failure_cache_seconds
        except (OSError, ValueError) as e:
            # Whatever else the fetch raised refuses this client, never every waiter's request.
            log.warning(
                "client %s refused: its metadata document could not be read (%s)",
                _short(url),
                type(e).__name__,
            )
            client, seconds = None, self.policy.failure_cache_seconds
        entry = _Entry(client, self._clock.now() + dt.timedelta(seconds=seconds))
        self._keep(url, entry)
        return entry

    def _keep(self, url: str, entry: _Entry) -> None:
        if len(self._cache) >= MAX_CACHED:
            now = self._clock.now()
            for key in [k for k, e in self._cache.items() if e.expires <= now]:
                del self._cache[key]
            while len(self._cache) >= MAX_CACHED:
                del self._cache[next(iter(self._cache))]
        self._cache.pop(url, None)
        self._cache[url] = entry

    async def _fetch_client(self, url: str) -> tuple[Client, int]:
        document, headers = await self._get_json(url, self.policy.max_bytes)
        client, jwks_uri = client_of(
            url, document, api_scopes=self.policy.scopes, resources=self.policy.resources
        )
        if jwks_uri is not None:
            problem = self.policy.fetch_problem(jwks_uri)
            if problem is not None:
                raise DocumentRefused(f"its jwks_uri {problem}")
            keys, _ = await self._get_json(jwks_uri, MAX_KEY_SET_BYTES)
            client = attrs.evolve(client, jwks=json.dumps(_key_set(keys)))
        return client, cache_seconds(headers, self.policy, self._clock.now())

    async def _get_json(self, url: str, max_bytes: int) -> tuple[Any, Mapping[str, str]]:
        try:
            async with self._http().get(
                yarl.URL(url, encoded=True),
                headers={"Accept": "application/json", "Accept-Encoding": "identity"},
                allow_redirects=False,  # a redirect is refused, not followed (nor re-checked)
                timeout=self._timeout,
            ) as response:
                if 300 <= response.status < 400:
                    raise DocumentRefused(
                        f"answered a redirect (HTTP {response.status}); none is followed"
                    )
                if response.status != 200:
                    raise DocumentRefused(f"answered HTTP {response.status}")
                raw = await _read_bounded(response, max_bytes)
                headers = {
                    k: response.headers[k]
                    for k in ("Cache-Control", "Expires", "Date")
                    if k in response.headers
                }
        except aiohttp.ClientConnectorDNSError as e:
            raise DocumentRefused(f"could not be fetched: {e.os_error}") from None
        except aiohttp.ClientError as e:
            raise DocumentRefused(f"could not be fetched ({type(e).__name__})") from None
        try:
            return json.loads(raw), headers
        except (ValueError, RecursionError):
            raise DocumentRefused("is not JSON") from None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            resolver = self._resolver or CheckedResolver(allow_loopback=not self.policy.production)
            connector = aiohttp.TCPConnector(
                resolver=resolver, use_dns_cache=False, limit=32, force_close=True
            )
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
            )
        return self._session


async def _read_bounded(response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    if response.content_length is not None and response.content_length > max_bytes:
        raise DocumentRefused(f"is larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > max_bytes:
            raise DocumentRefused(f"is larger than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
