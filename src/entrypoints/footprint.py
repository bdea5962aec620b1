"""The serving process's resident memory: what start-up leaves behind that an idle service does
not need (issue 13, goal 4: ``authgate serve`` on the embedded default idles within 60 MiB).
Each figure below is what idle VmRSS grows by with that measure alone left out (medians of 5
starts of the embedded default on uvloop; all of them together: 64.6 -> 59.3 MiB).

Importing this module steers two imports, so it must come before aiohttp and PyYAML:

- frozenlist's pure-Python build (``FROZENLIST_NO_EXTENSIONS``, frozenlist's documented switch;
  an operator's own setting is kept): the C++ build loads libstdc++ into the process (about
  1.0 MiB) for aiohttp's middleware and signal lists, which are frozen at start-up and only
  iterated afterwards.
- PyYAML without its libyaml binding (``yaml._yaml``, an optional extension PyYAML does
  without when it cannot be imported: ``yaml.__with_libyaml__`` is then False): the service
  reads its configuration with ``yaml.safe_load``, PyYAML's pure-Python loader, and never uses
  the C one (0.85 MiB, as PyYAML can then be forgotten, below). Only when PyYAML is not
  imported yet.

- :func:`defer_aiohttp_ca_certificates`: aiohttp builds its two default TLS client contexts
  when it is imported, each loading the system's CA certificates (1.65 MiB together). The
  service makes TLS connections only to providers at ``https://`` addresses (none in the
  embedded default); the contexts put in their place have the same settings and load the
  certificates just before their first TLS connection (at start-up when a provider is at an
  ``https://`` address).
- :func:`forget_package`: PyYAML, loaded to read the configuration (and imported by
  :mod:`authgate.entrypoints.config` only when it reads one), is removed from ``sys.modules``
  once it has (1.05 MiB).
- :func:`drop_import_leftovers`: attrs and cattrs keep the source text of every method they
  generate in :mod:`linecache`, for debuggers (about 0.6 MiB for the service's classes);
  dropped, with PyYAML's modules collected, once the configuration is read and before the
  application is built, the freed memory is reused by what start-up allocates next instead
  of staying resident beside it.
- :func:`share_one_malloc_arena`: glibc gives each thread that allocates an arena of its own;
  the service's threads (SQLite's, libuv's resolver pool) allocate little, and share the main
  one (0.35 MiB).
- :func:`return_free_memory`: once serving, the garbage of start-up is collected and the
  C heap's free pages go back to the system (``malloc_trim``, glibc only; 0.6 MiB).
"""

from __future__ import annotations

import ctypes
import gc
import linecache
import logging
import os
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

os.environ.setdefault("FROZENLIST_NO_EXTENSIONS", "1")
if "yaml" not in sys.modules:
    sys.modules.setdefault("yaml._yaml", None)  # type: ignore[arg-type]  # import -> ImportError

if TYPE_CHECKING:
    from authgate.entrypoints.config import Config

log = logging.getLogger("authgate")

# What aiohttp's _make_ssl_context sets and a context cannot report back.
AIOHTTP_ALPN = ("http/1.1",)


class DeferredCAContext(ssl.SSLContext):
    """A TLS context that loads the default CA certificates just before its first connection
    (the first ``wrap_bio`` or ``wrap_socket``: asyncio's, uvloop's and the blocking socket's
    way in), not when it is made. Made by :func:`deferred_copy`."""

    _load: Callable[[], None] | None
    _load_lock: threading.Lock

    def load_deferred(self) -> None:
        """Load the certificates now, if not done yet (thread-safe, at most once)."""
        if self._load is None:
            return
        with self._load_lock:
            load, self._load = self._load, None
            if load is not None:
                load()

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        self.load_deferred()
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        self.load_deferred()
        return super().wrap_socket(
            sock,
            server_side,
            do_handshake_on_connect,
            suppress_ragged_eofs,
            server_hostname,
            session,
        )


def deferred_copy(
    original: ssl.SSLContext, alpn: tuple[str, ...] | None = AIOHTTP_ALPN
) -> DeferredCAContext:
    """A context with the settings of ``original`` (protocol, options, verification, versions,
    ciphers, key log; ``alpn`` as given, a context cannot report its own) that loads the
    default CA certificates on first use instead of holding them now."""
    copy = DeferredCAContext(original.protocol)
    copy.check_hostname = False  # first: verify_mode may not be CERT_NONE while it is on
    copy.options = original.options
    copy.verify_flags = original.verify_flags
    copy.minimum_version = original.minimum_version
    copy.maximum_version = original.maximum_version
    copy.verify_mode = original.verify_mode
    copy.check_hostname = original.check_hostname
    copy.hostname_checks_common_name = original.hostname_checks_common_name
    copy.post_handshake_auth = original.post_handshake_auth
    copy.set_ciphers(":".join(c["name"] for c in original.get_ciphers()))
    if original.keylog_filename:
        copy.keylog_filename = original.keylog_filename
    if alpn is not None:
        copy.set_alpn_protocols(list(alpn))
    verified = original.verify_mode != ssl.CERT_NONE
    # ssl.create_default_context (aiohttp's verified context) loads with load_default_certs,
    # aiohttp's unverified one with set_default_verify_paths; the same on every platform
    # but Windows, where load_default_certs also reads the system store.
    copy._load = copy.load_default_certs if verified else copy.set_default_verify_paths
    copy._load_lock = threading.Lock()
    return copy


# The addresses of a provider the service itself connects to (not the browser's).
OUTBOUND = (
    "issuer",
    "token_endpoint",
    "jwks_uri",
    "userinfo_endpoint",
    "profile_endpoint",
    "risc_configuration",
    "revocation_endpoint",
)


def providers_use_tls(config: Config) -> bool:
    """Whether the service connects to a provider at an ``https://`` address: then the
    certificates are needed soon after start-up, and are loaded before serving."""
    for provider in config.providers.values():
        for name in OUTBOUND:
            address = getattr(provider, name)
            if isinstance(address, str) and address.lower().startswith("https://"):
                return True
    return False


def defer_aiohttp_ca_certificates() -> bool:
    """Put deferred copies in place of aiohttp's default TLS client contexts (the ones a
    session uses for ``ssl=True`` and ``ssl=False``), so that the CA certificates they loaded
    at import are freed. False, and nothing changed, when this aiohttp does not have them as
    expected (private names of ``aiohttp.connector``, checked: a later aiohttp only costs the
    memory again)."""
    from aiohttp import connector

    names = ("_SSL_CONTEXT_VERIFIED", "_SSL_CONTEXT_UNVERIFIED")
    originals = [getattr(connector, name, None) for name in names]
    if not all(isinstance(c, ssl.SSLContext) for c in originals):
        log.debug("aiohttp's default TLS contexts not found: CA certificates stay loaded")
        return False
    for name, original in zip(names, originals, strict=True):
        assert isinstance(original, ssl.SSLContext)
        if not isinstance(original, DeferredCAContext):
            setattr(connector, name, deferred_copy(original))
    return True


def load_deferred_ca_certificates() -> None:
    """Load the certificates of the deferred contexts in place in aiohttp now (at start-up,
    for a configuration that connects to providers over TLS: not in the event loop later)."""
    from aiohttp import connector

    for name in ("_SSL_CONTEXT_VERIFIED", "_SSL_CONTEXT_UNVERIFIED"):
        context = getattr(connector, name, None)
        if isinstance(context, DeferredCAContext):
            context.load_deferred()


def forget_package(name: str) -> int:
    """Remove a package and its submodules from ``sys.modules`` (how many): once nothing else
    refers to them, the garbage collector frees them, and a later import loads them afresh.
    For a package only start-up used (PyYAML, for the configuration)."""
    names = [m for m in sys.modules if m == name or m.startswith(name + ".")]
    for module in names:
        del sys.modules[module]
    return len(names)


def drop_import_leftovers() -> None:
    """Drop what the imports leave that serving never reads (the generated methods' source
    text in :mod:`linecache`; :mod:`traceback` reads real files back on demand), and collect
    the garbage, so that the application built next reuses that memory."""
    linecache.clearcache()
    gc.collect()


M_ARENA_MAX = -8  # glibc's mallopt parameter


def share_one_malloc_arena() -> bool:
    """Have every thread allocate from glibc's main arena (``mallopt(M_ARENA_MAX, 1)``);
    before any thread starts. False, and nothing changed, where the C library is not glibc."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_ARENA_MAX, 1))


def return_free_memory() -> None:
    """Collect start-up's garbage and give the C heap's free pages back to the system."""
    gc.collect()
    try:
        libc = ctypes.CDLL("libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: the allocator keeps its free pages
        return
    trim(0)
