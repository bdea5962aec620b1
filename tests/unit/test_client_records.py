"""The registered client record: redirect URIs matched exactly (a public client's loopback one
on any port), secrets compared as digests, the registry's look-up."""

from __future__ import annotations

import attrs
import pytest

from authgate.domain.openid.clients import (
    Client,
    ClientRegistry,
    SecretDigest,
    redirect_uri_problem,
)


def client(*redirect_uris: str, **settings: object) -> Client:
    return Client(
        client_id=str(settings.pop("client_id", "app")),
        name="App",
        client_type="public",
        token_endpoint_auth_method="none",
        redirect_uris=redirect_uris,
        **settings,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("registered", "presented", "matches"),
    [
        ("https://app.example.com/cb", "https://app.example.com/cb", True),
        # Exact: no prefix, no added query, no case folding, no trailing slash, no port.
        ("https://app.example.com/cb", "https://app.example.com/cb/", False),
        ("https://app.example.com/cb", "https://app.example.com/cb?x=1", False),
        ("https://app.example.com/cb", "https://APP.example.com/cb", False),
        ("https://app.example.com/cb", "https://app.example.com:443/cb", False),
        ("https://app.example.com/cb", "https://app.example.com:8443/cb", False),
        ("https://app.example.com/cb", "https://app.example.com/cb#x", False),
        ("https://app.example.com/cb", "https://app.example.com.evil.test/cb", False),
        # A loopback redirect on any port (RFC 8252 section 7.3), the rest exact.
        ("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb", True),
        ("http://127.0.0.1:8080/cb", "http://127.0.0.1:9090/cb", True),
        ("http://127.0.0.1:8080/cb", "http://127.0.0.1/cb", True),
        ("http://[::1]/cb", "http://[::1]:61000/cb", True),
        ("http://localhost/cb", "http://localhost:3000/cb", True),
        ("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb2", False),
        ("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb?x=1", False),
        ("http://127.0.0.1/cb", "http://localhost:51234/cb", False),
        ("http://127.0.0.1/cb", "https://127.0.0.1:51234/cb", False),
        ("http://127.0.0.1/cb", "http://127.0.0.1:0/cb", False),
        ("http://127.0.0.1/cb", "http://127.0.0.1:99999/cb", False),
        ("http://127.0.0.1/cb", "http://127.0.0.1:80x/cb", False),
        ("http://127.0.0.1/cb", "http://user@127.0.0.1:80/cb", False),
        ("http://127.0.0.1/cb", "http://127.0.0.2:80/cb", False),
        # A private-use scheme: exactly.
        ("com.example.app:/cb", "com.example.app:/cb", True),
        ("com.example.app:/cb", "com.example.app:/cb/x", False),
    ],
)
def test_redirect_uri_matching(registered: str, presented: str, matches: bool) -> None:
    assert client(registered).redirect_uri_registered(presented) is matches


@pytest.mark.parametrize(
    ("registered", "presented", "matches"),
    [
        ("http://127.0.0.1:8080/cb", "http://127.0.0.1:8080/cb", True),
        ("http://127.0.0.1:8080/cb", "http://127.0.0.1:9090/cb", False),
        ("http://127.0.0.1:8080/cb", "http://127.0.0.1/cb", False),
        ("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb", False),
        ("http://[::1]/cb", "http://[::1]:61000/cb", False),
        ("http://localhost:3000/cb", "http://localhost:3001/cb", False),
    ],
)
def test_a_confidential_clients_loopback_redirect_matches_exactly(
    registered: str, presented: str, matches: bool
) -> None:
    """Any port is for native apps (public clients, RFC 8252 section 7.3); a confidential
    web client's loopback address is one address, or another program on the machine could
    receive its codes."""
    web = attrs.evolve(
        client(registered), client_type="confidential", token_endpoint_auth_method="private_key_jwt"
    )
    assert web.redirect_uri_registered(presented) is matches


def test_post_logout_redirect_uris_match_exactly() -> None:
    app = client(
        "https://app.example.com/cb",
        post_logout_redirect_uris=("https://app.example.com/bye", "http://127.0.0.1:8080/bye"),
    )
    assert app.post_logout_redirect_uri_registered("https://app.example.com/bye")
    assert not app.post_logout_redirect_uri_registered("https://app.example.com/bye?foo=bar")
    assert not app.post_logout_redirect_uri_registered("http://127.0.0.1:9090/bye")
    assert not app.post_logout_redirect_uri_registered("https://app.example.com/cb")


@pytest.mark.parametrize(
    ("uri", "native", "problem"),
    [
        ("https://app.example.com/cb", False, None),
        ("http://127.0.0.1:8000/cb", False, None),
        ("http://[::1]/cb", False, None),
        ("com.example.app:/cb", True, None),
        ("com.example.app:/cb", False, "private-use scheme"),
        ("myapp:/cb", True, "must be https"),
        ("http://app.example.com/cb", True, "only for loopback"),
        ("http://127.0.0.1.example.com/cb", True, "only for loopback"),
        ("https:///cb", False, "must name a host"),
        ("https://app.example.com:99999/cb", False, "invalid port"),
        ("https://app.example.com/cb#top", False, "fragment"),
        ("data:text/html,x", True, "must be https"),
        ("", False, "white space"),
    ],
)
def test_what_may_be_registered(uri: str, native: bool, problem: str | None) -> None:
    found = redirect_uri_problem(uri, native=native)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_a_secret_digest_matches_its_secret_only() -> None:
    secret = "a-long-random-client-secret-0123456789"
    digest = SecretDigest.of(secret)
    assert digest.matches(secret)
    assert not digest.matches(secret + "x") and not digest.matches(secret.upper())
    assert repr(digest) == "SecretDigest(…)"
    # Salted: the same secret never gives the same digest twice.
    assert SecretDigest.of(secret).digest != digest.digest


def test_every_secret_of_a_rotation_authenticates() -> None:
    old, new = "old-secret-" + "o" * 30, "new-secret-" + "n" * 30
    app = client("https://a.example/cb", secrets=(SecretDigest.of(new), SecretDigest.of(old)))
    assert app.secret_matches(old) and app.secret_matches(new)
    assert not app.secret_matches("another")
    assert not client("https://a.example/cb").secret_matches("")


def test_the_registry_finds_clients_by_id_and_refuses_a_duplicate() -> None:
    a, b = client("https://a.example/cb", client_id="a"), client("https://b/cb", client_id="b")
    registry = ClientRegistry([a, b])
    assert registry.get("a") is a and registry.get("b") is b and registry.get("c") is None
    assert "a" in registry and "c" not in registry and len(registry) == 2
    with pytest.raises(ValueError, match="registered twice"):
        ClientRegistry([a, a])
