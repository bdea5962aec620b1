"""The idle-memory measures of ``authgate serve`` (authgate.entrypoints.footprint) keep TLS and
aiohttp working as before: aiohttp's default client contexts, replaced by copies that load the
CA certificates at their first connection, still verify (and still do not, for ``ssl=False``),
on asyncio's loop and on uvloop's, over a real TLS connection to a local server."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import os
import ssl
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import pytest
import uvloop
from aiohttp import connector, web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from authgate.entrypoints import footprint
from authgate.entrypoints.config import Config, parse

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("_SSL_CONTEXT_VERIFIED", "_SSL_CONTEXT_UNVERIFIED")


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _ca(folder: Path, label: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(label))
        .issuer_name(_name(label))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    path = folder / f"{label}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, path


def _server_context(folder: Path) -> tuple[ssl.SSLContext, Path, Path]:
    """A TLS server context for localhost signed by a CA of its own; the CA's file, and the
    file of another CA that did not sign it."""
    ca_key, ca_cert, ca_file = _ca(folder, "test-ca")
    _, _, other_file = _ca(folder, "other-ca")
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = folder / "server.pem", folder / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    server.set_alpn_protocols(["h2", "http/1.1"])
    return server, ca_file, other_file


@pytest.fixture
def deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh deferred copies in place of aiohttp's default contexts for this test, restored
    after it (fresh: an earlier test in this process may have loaded the ones in place)."""
    for name in NAMES:
        monkeypatch.setattr(connector, name, footprint.deferred_copy(getattr(connector, name)))


@pytest.fixture
def aiohttps_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """aiohttp's own default contexts in place for this test, as its import makes them."""
    make: Callable[[bool], ssl.SSLContext] | None = getattr(connector, "_make_ssl_context", None)
    if make is None:
        pytest.skip("this aiohttp builds its contexts otherwise")
    monkeypatch.setattr(connector, "_SSL_CONTEXT_VERIFIED", make(True))
    monkeypatch.setattr(connector, "_SSL_CONTEXT_UNVERIFIED", make(False))


def test_the_copies_have_the_settings_of_aiohttps_contexts() -> None:
    make: Callable[[bool], ssl.SSLContext] | None = getattr(connector, "_make_ssl_context", None)
    if make is None:
        pytest.skip("this aiohttp builds its contexts otherwise")
    for verified in (True, False):
        original = make(verified)
        copy = footprint.deferred_copy(original)
        for attribute in (
            "protocol",
            "options",
            "verify_flags",
            "verify_mode",
            "check_hostname",
            "minimum_version",
            "maximum_version",
            "hostname_checks_common_name",
            "post_handshake_auth",
            "keylog_filename",
        ):
            assert getattr(copy, attribute) == getattr(original, attribute), attribute
        assert [c["name"] for c in copy.get_ciphers()] == [
            c["name"] for c in original.get_ciphers()
        ]
        assert original.cert_store_stats()["x509_ca"] > 0
        assert copy.cert_store_stats()["x509_ca"] == 0  # nothing loaded until used


@pytest.mark.usefixtures("aiohttps_own")
def test_the_replacement_is_in_place_and_frees_the_originals() -> None:
    assert footprint.defer_aiohttp_ca_certificates()
    for name in NAMES:
        context = getattr(connector, name)
        assert isinstance(context, footprint.DeferredCAContext)
        assert context.cert_store_stats()["x509_ca"] == 0
    assert footprint.defer_aiohttp_ca_certificates()  # twice: still the same copies


def test_nothing_is_replaced_when_aiohttp_has_other_names(monkeypatch: pytest.MonkeyPatch) -> None:
    before = connector._SSL_CONTEXT_UNVERIFIED
    monkeypatch.delattr(connector, "_SSL_CONTEXT_VERIFIED")
    assert not footprint.defer_aiohttp_ca_certificates()
    assert connector._SSL_CONTEXT_UNVERIFIED is before


async def _fetch_both_ways(server: ssl.SSLContext) -> dict[str, Any]:
    """GET over TLS from a local server both ways, aiohttp's default (verified) and
    ``ssl=False``; what each gave (status and negotiated ALPN, or the error's class)."""

    async def hello(request: web.Request) -> web.Response:
        assert request.transport is not None
        tls = request.transport.get_extra_info("ssl_object")
        return web.Response(text=str(tls.selected_alpn_protocol()))

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server)
    await site.start()
    port = runner.addresses[0][1]
    results: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession() as http:
            for way, option in (("verified", True), ("unverified", False)):
                try:
                    async with http.get(f"https://localhost:{port}/", ssl=option) as response:
                        # the protocol the server saw negotiated (it offers h2 first)
                        results[way] = (response.status, await response.text())
                except aiohttp.ClientConnectorCertificateError as e:
                    results[way] = type(e).__name__
    finally:
        await runner.cleanup()
    return results


def _run(loop: str, coroutine: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    factory = uvloop.new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coroutine)


@pytest.mark.usefixtures("deferred")
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_trusted_server_is_reached_and_verified(
    loop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, ca_file, _ = _server_context(tmp_path)
    # The default CA certificates are read when first needed: here, only the test CA's.
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "none"))
    results = _run(loop, _fetch_both_ways(server))
    assert results == {"verified": (200, "http/1.1"), "unverified": (200, "http/1.1")}
    assert connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"] == 1


@pytest.mark.usefixtures("deferred")
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_an_untrusted_server_is_refused_unless_verification_is_off(
    loop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _, other_file = _server_context(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(other_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "none"))
    results = _run(loop, _fetch_both_ways(server))
    assert results == {
        "verified": "ClientConnectorCertificateError",
        "unverified": (200, "http/1.1"),
    }


@pytest.mark.usefixtures("deferred")
def test_loading_before_serving_loads_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ca_file, _ = _server_context(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "none"))
    footprint.load_deferred_ca_certificates()
    footprint.load_deferred_ca_certificates()
    for name in NAMES:
        assert getattr(connector, name).cert_store_stats()["x509_ca"] == 1


def _default_config() -> Config:
    text = (ROOT / "config.default.yaml").read_text()
    return parse(text)


def test_tls_providers_are_recognised() -> None:
    config = _default_config()
    assert not footprint.providers_use_tls(config)  # the development provider, over http
    google = config.providers["google"]
    for field in ("issuer", "jwks_uri", "revocation_endpoint"):
        change: dict[str, Any] = {field: "https://accounts.example.com"}
        secure = attrs.evolve(google, **change)
        changed = attrs.evolve(config, providers={**config.providers, "google": secure})
        assert footprint.providers_use_tls(changed), field


def test_a_forgotten_package_is_loaded_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "forgettable"
    package.mkdir()
    (package / "__init__.py").write_text("from . import part\n")
    (package / "part.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = __import__("forgettable")
    assert footprint.forget_package("forgettable") == 2
    assert not any(m.startswith("forgettable") for m in sys.modules)
    again = __import__("forgettable")
    assert again is not first and again.part.VALUE == 1
    footprint.forget_package("forgettable")


def test_the_configuration_is_read_after_pyyaml_was_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m == "yaml" or m.startswith("yaml.")]:
        monkeypatch.delitem(sys.modules, name)  # as forget_package, restored after the test
    assert _default_config().rest.host == "127.0.0.1"


def test_the_command_loads_neither_libstdcxx_nor_libyaml() -> None:
    """The service's command line loads frozenlist's and PyYAML's pure-Python builds: no C++
    runtime (about 1 MiB) and no libyaml binding; YAML still parses; one malloc arena."""
    probe = (
        "import authgate.entrypoints.cli, frozenlist, yaml, pathlib\n"
        "from authgate.entrypoints import footprint\n"
        "maps = pathlib.Path('/proc/self/maps').read_text()\n"
        "print(frozenlist.FrozenList.__module__, 'libstdc++' in maps, yaml.__with_libyaml__,\n"
        "      yaml.safe_load('a: [1, 2]') == {'a': [1, 2]}, footprint.share_one_malloc_arena())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "FROZENLIST_NO_EXTENSIONS"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["frozenlist", "False", "False", "True", "True"]
