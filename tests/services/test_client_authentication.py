"""Client authentication at the token endpoint, from what a request carries: the Authorization
header as client libraries write it and the form body as the endpoint parses it.

Secrets (Basic, form-encoded or raw, and in the form), signed assertions (RFC 7523) made with
joserfc and checked against keys registered inline or published over HTTP, public clients by
client_id, and the RFC 6749 section 5.2 errors of every way it can go wrong. A replayed
assertion is refused on each store of one-time ids.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlencode

import aiohttp
import attrs
import pytest
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import ECKey, Key, OctKey, RSAKey

from authgate.adapters.openid import RegisteredClientKeys
from authgate.domain.openid.clients import Client, ClientRegistry, SecretDigest
from authgate.domain.openid.refusals import InvalidClient, OAuthInvalidRequest, OAuthUnavailable
from authgate.services.openid.client_authentication import JWT_BEARER, ClientAuthentication
from authgate.services.openid.client_directory import ClientDirectory
from tests.services.fakes import FixedClock
from tests.support.stores import KINDS, Store, open_store

ISSUER = "https://auth.example.com"
TOKEN_ENDPOINT = f"{ISSUER}/oauth2/token"
SECRET = "basic-secret-0123456789-0123456789-abcd"
OLD_SECRET = "the-secret-before-rotation-0123456789xx"
# What `openssl rand -base64` makes: +, / and = change under form-urlencoding.
SPECIAL = "p+ss/w=rd+0123456789/0123456789+abcdefg="
POST_SECRET = "post-secret-0123456789-0123456789-abcdef"

INLINE_KEY = ECKey.generate_key("P-256", parameters={"kid": "inline-1"})
PUBLISHED_KEY = RSAKey.generate_key(2048, parameters={"kid": "published-1"})


def confidential(client_id: str, method: Any, **settings: Any) -> Client:
    return Client(
        client_id=client_id,
        name=client_id,
        client_type="confidential",
        token_endpoint_auth_method=method,
        redirect_uris=("https://app.example.com/cb",),
        **settings,
    )


def jwks_json(*keys: Key) -> str:
    import json

    return json.dumps({"keys": [k.as_dict(private=False) for k in keys]})


@attrs.define
class KeyServer:
    """A client's server publishing its key set (``jwks_uri``), counting the fetches."""

    keys: list[Key]
    url: str = ""
    fetches: int = 0
    down: bool = False

    async def handle(self, request: web.Request) -> web.Response:
        self.fetches += 1
        if self.down:
            return web.json_response({"error": "down"}, status=500)
        return web.json_response({"keys": [k.as_dict(private=False) for k in self.keys]})


@attrs.define
class Setup:
    auth: ClientAuthentication
    clock: FixedClock
    server: KeyServer


@pytest.fixture
async def key_server(aiohttp_server: Any) -> KeyServer:
    server = KeyServer([PUBLISHED_KEY])
    app = web.Application()
    app.router.add_get("/jwks", server.handle)
    running = await aiohttp_server(app)
    server.url = str(running.make_url("/jwks"))
    return server


@pytest.fixture(params=["memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = request.getfixturevalue("clean_postgres_url") if request.param == "postgres" else None
    opened = await open_store(request.param, sqlite_path=tmp_path / "authgate.db", postgres_url=url)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def setup(key_server: KeyServer, store: Store) -> AsyncIterator[Setup]:
    clients = ClientDirectory(
        ClientRegistry(
            [
                confidential(
                    "basic-app",
                    "client_secret_basic",
                    secrets=(SecretDigest.of(SECRET), SecretDigest.of(OLD_SECRET)),
                ),
                confidential(
                    "special-app", "client_secret_basic", secrets=(SecretDigest.of(SPECIAL),)
                ),
                confidential(
                    "post-app", "client_secret_post", secrets=(SecretDigest.of(POST_SECRET),)
                ),
                confidential("jwt-inline", "private_key_jwt", jwks=jwks_json(INLINE_KEY)),
                confidential("jwt-published", "private_key_jwt", jwks_uri=key_server.url),
                Client(
                    client_id="spa",
                    name="SPA",
                    client_type="public",
                    token_endpoint_auth_method="none",
                    redirect_uris=("https://spa.example.com/cb",),
                ),
            ]
        )
    )
    clock = FixedClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    async with aiohttp.ClientSession() as session:
        auth = ClientAuthentication(
            clients,
            RegisteredClientKeys(session, clock),
            store.units,
            clock,
            issuer=ISSUER,
        )
        yield Setup(auth, clock, key_server)


def form(**fields: str) -> dict[str, str]:
    """A token request's form body as a client sends it and the endpoint parses it."""
    body = urlencode({"grant_type": "authorization_code", "code": "c0de", **fields})
    return dict(parse_qsl(body, keep_blank_values=True, strict_parsing=True))


def basic_as_rfc_6749(client_id: str, secret: str) -> str:
    """RFC 6749 section 2.3.1: each part form-urlencoded, then Basic."""
    raw = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return "Basic " + base64.b64encode(raw).decode()


def basic_as_aiohttp(client_id: str, secret: str) -> str:
    """What aiohttp (and requests, and curl -u) send: the parts as they are."""
    return aiohttp.encode_basic_auth(client_id, secret)


def assertion(
    clock: FixedClock,
    key: Key = INLINE_KEY,
    client_id: str = "jwt-inline",
    alg: str = "ES256",
    **overrides: Any,
) -> str:
    now = int(clock.now().timestamp())
    claims: dict[str, Any] = {
        "iss": client_id,
        "sub": client_id,
        "aud": ISSUER,
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 60,
    }
    claims.update(overrides)
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode({"alg": alg, "kid": key.kid}, claims, key, algorithms=[alg])


def jwt_form(token: str, **fields: str) -> dict[str, str]:
    return form(client_assertion_type=JWT_BEARER, client_assertion=token, **fields)


# -- client_secret_basic ---------------------------------------------------------------------


@pytest.mark.parametrize("encode", [basic_as_rfc_6749, basic_as_aiohttp])
@pytest.mark.parametrize(
    ("client_id", "secret"),
    [("basic-app", SECRET), ("basic-app", OLD_SECRET), ("special-app", SPECIAL)],
)
async def test_basic_with_any_secret_of_the_rotation_in_either_spelling(
    setup: Setup, encode: Callable[[str, str], str], client_id: str, secret: str
) -> None:
    client = await setup.auth.authenticate(encode(client_id, secret), form())
    assert client.client_id == client_id
    # The client_id may be repeated in the body, as the same one.
    again = await setup.auth.authenticate(encode(client_id, secret), form(client_id=client_id))
    assert again is client


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        (basic_as_rfc_6749("basic-app", "wrong-" + SECRET), "wrong secret"),
        (basic_as_rfc_6749("basic-app", ""), "wrong secret"),
        (basic_as_rfc_6749("nobody", SECRET), "unknown client"),
        ("Basic !!!not-base64!!!", "not base64"),
        ("Basic " + base64.b64encode(b"basic-app").decode(), "without a colon"),
        ("Basic " + base64.b64encode(b"\xff\xfe:x").decode(), "not base64 of UTF-8"),
        ("Bearer " + SECRET, "another scheme"),
        (basic_as_rfc_6749("post-app", POST_SECRET), "registered client_secret_post"),
        (basic_as_rfc_6749("spa", "anything"), "registered none"),
    ],
)
async def test_a_failed_basic_authentication_is_401_with_a_basic_challenge(
    setup: Setup, header: str, detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="authgate.security"),
        pytest.raises(InvalidClient) as e,
    ):
        await setup.auth.authenticate(header, form())
    assert e.value.error == "invalid_client"
    assert e.value.challenge == "Basic"
    assert e.value.description == "client authentication failed"  # never which part
    assert detail in e.value.detail
    assert SECRET not in caplog.text and POST_SECRET not in caplog.text


async def test_basic_for_one_client_and_client_id_of_another_is_refused(setup: Setup) -> None:
    with pytest.raises(InvalidClient, match="client authentication failed") as e:
        await setup.auth.authenticate(
            basic_as_rfc_6749("basic-app", SECRET), form(client_id="post-app")
        )
    assert "is not the Basic credentials' client" in e.value.detail


# -- client_secret_post ----------------------------------------------------------------------


async def test_post_with_the_secret_in_the_form(setup: Setup) -> None:
    body = form(client_id="post-app", client_secret=POST_SECRET)
    assert (await setup.auth.authenticate(None, body)).client_id == "post-app"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (form(client_id="post-app", client_secret=POST_SECRET + "x"), "wrong secret"),
        (form(client_secret=POST_SECRET), "no client_id"),
        (form(client_id="basic-app", client_secret=SECRET), "registered client_secret_basic"),
        (form(client_id="spa", client_secret=POST_SECRET), "registered none"),
        (form(client_id="jwt-inline", client_secret=POST_SECRET), "registered private_key_jwt"),
    ],
)
async def test_a_failed_post_authentication_has_no_challenge(
    setup: Setup, body: dict[str, str], detail: str
) -> None:
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(None, body)
    assert e.value.challenge is None
    assert detail in e.value.detail


# -- one method at a time --------------------------------------------------------------------


async def test_more_than_one_method_is_an_invalid_request(setup: Setup) -> None:
    both = [
        (basic_as_rfc_6749("basic-app", SECRET), form(client_secret=SECRET)),
        (basic_as_rfc_6749("basic-app", SECRET), jwt_form(assertion(setup.clock))),
        (None, jwt_form(assertion(setup.clock), client_secret=POST_SECRET)),
    ]
    for header, body in both:
        with pytest.raises(OAuthInvalidRequest) as e:
            await setup.auth.authenticate(header, body)
        assert e.value.error == "invalid_request"


# -- none: public clients --------------------------------------------------------------------


async def test_a_public_client_is_named_by_its_client_id(setup: Setup) -> None:
    assert (await setup.auth.authenticate(None, form(client_id="spa"))).client_id == "spa"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (form(client_id="basic-app"), "registered client_secret_basic"),
        (form(client_id="nobody"), "unknown client"),
        (form(), "no client authentication and no client_id"),
        (form(client_id=""), "no client authentication and no client_id"),
    ],
)
async def test_without_authentication_only_a_public_client_passes(
    setup: Setup, body: dict[str, str], detail: str
) -> None:
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(None, body)
    assert detail in e.value.detail


# -- private_key_jwt -------------------------------------------------------------------------


async def test_an_assertion_signed_by_a_registered_key(setup: Setup) -> None:
    token = assertion(setup.clock, aud=ISSUER)
    client = await setup.auth.authenticate(None, jwt_form(token))
    assert client.client_id == "jwt-inline"


@pytest.mark.parametrize(
    ("aud", "detail"),
    [
        # The token endpoint's URL: what a malicious server's metadata can make a client sign.
        (TOKEN_ENDPOINT, "aud must be the issuer"),
        # A list, even of the issuer alone: one string exactly.
        ([ISSUER], "aud must be the issuer as one string, not a list"),
        ([ISSUER, "https://other.example"], "aud must be the issuer as one string, not a list"),
        ([TOKEN_ENDPOINT, ISSUER], "aud must be the issuer as one string, not a list"),
        (ISSUER + "/", "aud must be the issuer"),
        (ISSUER.upper(), "aud must be the issuer"),
        ("https://other.example", "aud must be the issuer"),
        (None, "aud must be the issuer"),
        ({"aud": ISSUER}, "aud must be the issuer"),
    ],
)
async def test_an_assertion_s_audience_is_the_issuer_alone(
    setup: Setup, aud: Any, detail: str
) -> None:
    """The 2025 audience-injection class: an assertion a client made for a list of audiences,
    or for a token endpoint URL someone's metadata gave it, proves nothing here."""
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(None, jwt_form(assertion(setup.clock, aud=aud)))
    assert e.value.detail.endswith(detail), e.value.detail
    assert e.value.error == "invalid_client"


async def test_an_assertion_checked_with_the_keys_at_the_client_s_jwks_uri(setup: Setup) -> None:
    for _ in range(3):
        token = assertion(setup.clock, PUBLISHED_KEY, "jwt-published", "RS256")
        client = await setup.auth.authenticate(None, jwt_form(token, client_id="jwt-published"))
        assert client.client_id == "jwt-published"
    assert setup.server.fetches == 1  # cached

    # The client rotates: its new key is published, then used; a fetch finds it.
    rotated = RSAKey.generate_key(2048, parameters={"kid": "published-2"})
    setup.server.keys = [rotated, PUBLISHED_KEY]
    setup.clock.advance(6)
    token = assertion(setup.clock, rotated, "jwt-published", "PS256")
    assert (await setup.auth.authenticate(None, jwt_form(token))).client_id == "jwt-published"
    assert setup.server.fetches == 2


async def test_forged_assertions_cost_the_client_s_server_one_fetch_per_floor(
    setup: Setup,
) -> None:
    genuine = assertion(setup.clock, PUBLISHED_KEY, "jwt-published", "RS256")
    await setup.auth.authenticate(None, jwt_form(genuine))
    forger = RSAKey.generate_key(2048, parameters={"kid": "forged"})
    for _ in range(5):  # within the floor: no fetch, and no verdict either ("retry later")
        token = assertion(setup.clock, forger, "jwt-published", "RS256")
        with pytest.raises(OAuthUnavailable):
            await setup.auth.authenticate(None, jwt_form(token))
    assert setup.server.fetches == 1
    setup.clock.advance(6)
    token = assertion(setup.clock, forger, "jwt-published", "RS256")
    with pytest.raises(InvalidClient) as e:  # a fetch proves the kid absent: a verdict
        await setup.auth.authenticate(None, jwt_form(token))
    assert "for kid 'forged'" in e.value.detail
    for _ in range(5):  # and it is remembered: no fetch for it again
        token = assertion(setup.clock, forger, "jwt-published", "RS256")
        with pytest.raises((InvalidClient, OAuthUnavailable)):
            await setup.auth.authenticate(None, jwt_form(token))
    assert setup.server.fetches == 2


async def test_the_client_s_keys_out_of_reach_is_a_503_not_a_verdict(setup: Setup) -> None:
    setup.server.down = True
    token = assertion(setup.clock, PUBLISHED_KEY, "jwt-published", "RS256")
    with pytest.raises(OAuthUnavailable) as e:
        await setup.auth.authenticate(None, jwt_form(token))
    assert e.value.error == "temporarily_unavailable"


@pytest.mark.parametrize("store", KINDS, indirect=True)
async def test_an_assertion_is_used_once(setup: Setup) -> None:
    token = assertion(setup.clock)
    await setup.auth.authenticate(None, jwt_form(token))
    setup.clock.advance(1)
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(None, jwt_form(token))
    assert "jti used before" in e.value.detail
    # Another assertion with a jti of its own passes.
    assert await setup.auth.authenticate(None, jwt_form(assertion(setup.clock)))


def _hmac_with_the_public_key(clock: FixedClock) -> str:
    """HS256 keyed by the client's public key: a confusion a verifier must not fall for."""
    public = jwks_json(INLINE_KEY).encode()
    return assertion(clock, OctKey.import_key(public, {"kid": "inline-1"}), alg="HS256")


def _unsigned(clock: FixedClock) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"none","kid":"inline-1"}').rstrip(b"=").decode()
    payload = assertion(clock).split(".")[1]
    return f"{header}.{payload}."


@pytest.mark.parametrize(
    ("make", "detail"),
    [
        (lambda c: assertion(c, iss="someone-else"), "iss and sub must both be the client_id"),
        (lambda c: assertion(c, aud="https://other.example/token"), "aud must be the issuer"),
        (lambda c: assertion(c, aud=None), "aud must be the issuer"),
        (lambda c: assertion(c, jti=None), "has no jti"),
        (lambda c: assertion(c, exp=None), "has no exp"),
        (lambda c: assertion(c, exp=int(c.now().timestamp()) - 60), "has expired"),
        (lambda c: assertion(c, exp=int(c.now().timestamp()) + 7200), "longer than an hour"),
        (lambda c: assertion(c, nbf=int(c.now().timestamp()) + 600), "nbf is in the future"),
        (lambda c: assertion(c, iat=int(c.now().timestamp()) + 600), "iat is in the future"),
        (
            lambda c: assertion(c, ECKey.generate_key("P-256", parameters={"kid": "inline-1"})),
            "signature does not verify",
        ),
        (
            lambda c: assertion(c, ECKey.generate_key("P-256", parameters={"kid": "other"})),
            "no registered key for kid 'other'",
        ),
        (_hmac_with_the_public_key, "algorithm 'HS256' is not allowed"),
        (_unsigned, "algorithm 'none' is not allowed"),
        (lambda c: assertion(c, client_id="nobody"), "unknown"),
        (lambda c: assertion(c, client_id="basic-app"), "registered client_secret_basic"),
        (lambda c: "not-a-jwt", "unknown"),
    ],
)
async def test_an_assertion_that_does_not_prove_the_client_is_refused(
    setup: Setup, make: Callable[[FixedClock], str], detail: str
) -> None:
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(None, jwt_form(make(setup.clock)))
    assert e.value.challenge is None
    assert detail in e.value.detail, e.value.detail


async def test_the_assertion_type_and_the_client_id_must_agree(setup: Setup) -> None:
    token = assertion(setup.clock)
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(
            None, form(client_assertion_type="urn:example:saml", client_assertion=token)
        )
    assert "is not JWT" in e.value.detail
    with pytest.raises(OAuthInvalidRequest):
        await setup.auth.authenticate(None, form(client_assertion=token))
    with pytest.raises(OAuthInvalidRequest):
        await setup.auth.authenticate(None, form(client_assertion_type=JWT_BEARER))
    with pytest.raises(InvalidClient) as e:
        await setup.auth.authenticate(None, jwt_form(token, client_id="jwt-published"))
    assert "is not the assertion's" in e.value.detail
