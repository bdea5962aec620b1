"""``clients:``: the applications registered with the OpenID Provider.

Every class of mistake stops start-up with one line naming the key; a good entry becomes the
:class:`~authgate.domain.openid.clients.Client` the provider's services look up, its
secrets kept only as digests.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from joserfc.jwk import ECKey, RSAKey

from authgate.entrypoints.app.config import (
    ConfigError,
    client_registry,
    openid_issuer,
    parse,
)
from authgate.entrypoints.cli import main
from tests.cli.test_config_cli import run_cli

SECRET = "s3cr3t-" + "x" * 40
OTHER_SECRET = "another-secret-" + "y" * 30
PUBLIC_JWK = dict(ECKey.generate_key("P-256", parameters={"kid": "k1"}).as_dict(private=False))

BASE: dict[str, Any] = {
    "rest": {"port": 8080},
    "otel": {"service": {"name": "t"}, "sdk": {"disabled": True}},
    "environment": "development",
    "clients": {
        "web": {
            "name": "Web app",
            "type": "confidential",
            "secrets": [SECRET],
            "redirect_uris": ["https://app.example.com/callback"],
        },
        "native": {
            "name": "Phone app",
            "type": "public",
            "redirect_uris": ["com.example.app:/callback", "http://127.0.0.1/callback"],
        },
    },
}


def config_text(change: dict[str, Any] | None = None, **clients: Any) -> str:
    """The base configuration with ``change`` merged in at the top and each named client's
    settings replaced by ``clients[name]`` (None removes a setting)."""
    data = copy.deepcopy(BASE)
    for name, settings in clients.items():
        entry = data["clients"].setdefault(name, {})
        for key, value in settings.items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
    data.update(change or {})
    return yaml.safe_dump(data, sort_keys=False)


# name -> (configuration text, the one line it stops start-up with)
BAD: dict[str, tuple[str, str]] = {
    "unknown-key": (
        config_text(web={"secret": SECRET}),
        "clients.web.secret: unknown key",
    ),
    "no-name": (config_text(web={"name": None}), "clients.web.name: required key missing"),
    "blank-name": (
        config_text(web={"name": " "}),
        "clients.web.name: 1 to 100 printable characters",
    ),
    "no-type": (config_text(web={"type": None}), "clients.web.type: required key missing"),
    "bad-type": (
        config_text(web={"type": "private"}),
        "clients.web.type: must be one of confidential, public",
    ),
    "bad-method": (
        config_text(web={"token_endpoint_auth_method": "client_secret_jwt"}),
        "clients.web.token_endpoint_auth_method: must be one of client_secret_basic, "
        "client_secret_post, none, private_key_jwt",
    ),
    "short-secret": (
        config_text(web={"secrets": ["password1"]}),
        "clients.web.secrets[0]: each secret must be at least 32 characters of random text "
        "(openssl rand -base64 32 makes one)",
    ),
    "secret-not-text": (
        config_text(web={"secrets": [12345]}),
        "clients.web.secrets[0]: expected a string (a secret, usually ${VARIABLE})",
    ),
    "secrets-not-a-list": (
        config_text(web={"secrets": SECRET}),
        "clients.web.secrets: expected an array, got a string",
    ),
    "no-secret": (
        config_text(web={"secrets": []}),
        "clients.web.secrets: client_secret_basic needs at least one secret",
    ),
    "no-secret-post": (
        config_text(web={"secrets": None, "token_endpoint_auth_method": "client_secret_post"}),
        "clients.web.secrets: client_secret_post needs at least one secret",
    ),
    "public-with-secret-method": (
        config_text(native={"token_endpoint_auth_method": "client_secret_basic"}),
        "clients.native.token_endpoint_auth_method: a public client cannot keep a secret; its "
        "method is none",
    ),
    "public-with-secrets": (
        config_text(native={"secrets": [SECRET]}),
        "clients.native.secrets: only a client_secret_basic or client_secret_post client has "
        "secrets",
    ),
    "confidential-with-none": (
        config_text(web={"token_endpoint_auth_method": "none", "secrets": None}),
        "clients.web.token_endpoint_auth_method: a confidential client authenticates with one "
        "of client_secret_basic, client_secret_post, private_key_jwt",
    ),
    "jwt-without-keys": (
        config_text(web={"token_endpoint_auth_method": "private_key_jwt", "secrets": None}),
        "clients.web: private_key_jwt needs jwks_uri or jwks (one of them)",
    ),
    "jwt-with-both-keys": (
        config_text(
            web={
                "token_endpoint_auth_method": "private_key_jwt",
                "secrets": None,
                "jwks_uri": "https://app.example.com/jwks",
                "jwks": {"keys": [PUBLIC_JWK]},
            }
        ),
        "clients.web: private_key_jwt needs jwks_uri or jwks (one of them)",
    ),
    "jwt-with-secrets": (
        config_text(
            web={
                "token_endpoint_auth_method": "private_key_jwt",
                "jwks_uri": "https://app.example.com/jwks",
            }
        ),
        "clients.web.secrets: only a client_secret_basic or client_secret_post client has secrets",
    ),
    "jwt-keys-over-http": (
        config_text(
            web={
                "token_endpoint_auth_method": "private_key_jwt",
                "secrets": None,
                "jwks_uri": "http://app.example.com/jwks",
            }
        ),
        "clients.web.jwks_uri: 'http://app.example.com/jwks' must be an https URL (http only "
        "on loopback)",
    ),
    "jwt-private-key": (
        config_text(
            web={
                "token_endpoint_auth_method": "private_key_jwt",
                "secrets": None,
                "jwks": {"keys": [dict(RSAKey.generate_key(2048).as_dict(private=True))]},
            }
        ),
        "clients.web.jwks: must hold public keys only (a private member is there)",
    ),
    "jwt-empty-key-set": (
        config_text(
            web={"token_endpoint_auth_method": "private_key_jwt", "secrets": None, "jwks": {}}
        ),
        "clients.web.jwks: must be a JWK Set ({keys: [...]}) with at least one key",
    ),
    "jwt-symmetric-key": (
        config_text(
            web={
                "token_endpoint_auth_method": "private_key_jwt",
                "secrets": None,
                "jwks": {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]},
            }
        ),
        "clients.web.jwks: every key must be an RSA, EC or OKP public key",
    ),
    "jwt-broken-key": (
        config_text(
            web={
                "token_endpoint_auth_method": "private_key_jwt",
                "secrets": None,
                "jwks": {"keys": [{"kty": "EC", "crv": "P-256", "x": "AA"}]},
            }
        ),
        "clients.web.jwks: a key cannot be read (key_parameter: 'y' is required)",
    ),
    "keys-without-jwt": (
        config_text(web={"jwks_uri": "https://app.example.com/jwks"}),
        "clients.web: jwks_uri and jwks are the keys of private_key_jwt",
    ),
    "no-redirect-uris": (
        config_text(web={"redirect_uris": []}),
        "clients.web.redirect_uris: at least one redirect URI",
    ),
    "redirect-fragment": (
        config_text(web={"redirect_uris": ["https://app.example.com/cb#x"]}),
        "clients.web.redirect_uris: 'https://app.example.com/cb#x' must not have a fragment",
    ),
    "redirect-http": (
        config_text(web={"redirect_uris": ["http://app.example.com/cb"]}),
        "clients.web.redirect_uris: 'http://app.example.com/cb' http is only for loopback "
        "(127.0.0.1, [::1] or localhost); use https",
    ),
    "redirect-user-info": (
        config_text(web={"redirect_uris": ["https://me@app.example.com/cb"]}),
        "clients.web.redirect_uris: 'https://me@app.example.com/cb' must name a host (and no "
        "user name)",
    ),
    "redirect-private-scheme-confidential": (
        config_text(web={"redirect_uris": ["com.example.app:/cb"]}),
        "clients.web.redirect_uris: 'com.example.app:/cb' a private-use scheme is for the "
        "native apps of public clients; a confidential client redirects to https",
    ),
    "redirect-script": (
        config_text(native={"redirect_uris": ["javascript:alert(1)"]}),
        "clients.native.redirect_uris: 'javascript:alert(1)' must be https, http on loopback, "
        "or a private-use scheme of a native app (a reverse domain name such as "
        "com.example.app:/callback)",
    ),
    "redirect-space": (
        config_text(web={"redirect_uris": ["https://app.example.com/a b"]}),
        "clients.web.redirect_uris: 'https://app.example.com/a b' must be a URI without white "
        "space",
    ),
    "post-logout-http": (
        config_text(web={"post_logout_redirect_uris": ["http://app.example.com/bye"]}),
        "clients.web.post_logout_redirect_uris: 'http://app.example.com/bye' http is only for "
        "loopback (127.0.0.1, [::1] or localhost); use https",
    ),
    "backchannel-http": (
        config_text(web={"backchannel_logout_uri": "http://app.example.com/logout"}),
        "clients.web.backchannel_logout_uri: 'http://app.example.com/logout' must be an https "
        "URL (http only on loopback)",
    ),
    "backchannel-fragment": (
        config_text(web={"backchannel_logout_uri": "https://app.example.com/logout#f"}),
        "clients.web.backchannel_logout_uri: 'https://app.example.com/logout#f' must not have "
        "a fragment",
    ),
    "not-a-scope-token": (
        config_text(web={"allowed_scopes": ["openid", "two words"]}),
        "clients.web.allowed_scopes: 'two words' is not a scope token (RFC 6749 section 3.3: "
        "printable ASCII, no space, quote or backslash)",
    ),
    "no-openid-scope": (
        config_text(web={"allowed_scopes": ["profile"]}),
        "clients.web.allowed_scopes: must include openid (the code flow needs it)",
    ),
    "long-code": (
        config_text(web={"code_seconds": 61}),
        "clients.web.code_seconds: must be between 1 and 60",
    ),
    "no-access-token-lifetime": (
        config_text(web={"access_token_seconds": 0}),
        "clients.web.access_token_seconds: must be between 1 and 86400",
    ),
    "long-id-token": (
        config_text(web={"id_token_seconds": 86401}),
        "clients.web.id_token_seconds: must be between 1 and 86400",
    ),
    "no-refresh-lifetime": (
        config_text(web={"refresh_token_seconds": -5}),
        "clients.web.refresh_token_seconds: must be between 1 and 31536000",
    ),
    "id-token-alg": (
        config_text(web={"id_token_signed_response_alg": "none"}),
        "clients.web.id_token_signed_response_alg: must be one of ES256, RS256",
    ),
    "public-introspection": (
        config_text(native={"introspection": True}),
        "clients.native.introspection: only a confidential client may introspect (a public one "
        "cannot authenticate)",
    ),
    "confidential-origins": (
        config_text(web={"allowed_origins": ["https://app.example.com"]}),
        "clients.web.allowed_origins: only public clients are called from browsers; a "
        "confidential client keeps its secret on a server",
    ),
    "wildcard-origin": (
        config_text(native={"allowed_origins": ["*"]}),
        "clients.native.allowed_origins: '*' is not an origin (scheme://host[:port])",
    ),
    "client-id-space": (
        config_text({"clients": {"my app": BASE["clients"]["web"]}}),
        "clients.my app: a client_id is 1 to 255 printable ASCII characters, no space",
    ),
    "client-id-is-the-session-audience": (
        config_text({"clients": {"authgate": BASE["clients"]["web"]}}),
        "clients.authgate: a client_id must differ from session.audience",
    ),
    "production-without-public-url": (
        config_text({"environment": "production"}),
        "clients: the OpenID Provider needs rest.public_url, an https URL (its issuer), in "
        "production",
    ),
    "production-over-http": (
        config_text(
            {"environment": "production", "rest": {"port": 8080, "public_url": "http://a.b"}}
        ),
        "clients: the OpenID Provider needs rest.public_url, an https URL (its issuer), in "
        "production",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_client_entry_is_one_line(name: str) -> None:
    text, line = BAD[name]
    with pytest.raises(ConfigError) as e:
        parse(text)
    assert str(e.value) == line
    assert SECRET not in str(e.value)


def test_start_up_stops_with_the_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(BAD["redirect-http"][0])
    assert main(["serve", "--config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"authgate: configuration error in {path}: {BAD['redirect-http'][1]}\n"


FRAGMENTS = {
    "web": (
        config_text(web={"redirect_uris": ["https://app.example.com/cb#x"]}),
        "clients.web.redirect_uris: 'https://app.example.com/cb#x' must not have a fragment",
    ),
    "native-empty-fragment": (
        config_text(native={"redirect_uris": ["com.example.app:/callback#"]}),
        "clients.native.redirect_uris: 'com.example.app:/callback#' must not have a fragment",
    ),
    "loopback": (
        config_text(native={"redirect_uris": ["http://127.0.0.1/callback#done"]}),
        "clients.native.redirect_uris: 'http://127.0.0.1/callback#done' must not have a fragment",
    ),
    "post-logout": (
        config_text(web={"post_logout_redirect_uris": ["https://app.example.com/bye#top"]}),
        "clients.web.post_logout_redirect_uris: 'https://app.example.com/bye#top' must not "
        "have a fragment",
    ),
}


def test_a_registered_uri_with_a_fragment_stops_a_real_serve(tmp_path: Path) -> None:
    """``authgate serve --config`` in processes of its own: a fragment in a registered
    redirect URI (RFC 6749 section 3.1.2) is one line naming the key, status 2, no server."""
    procs = {}
    for name, (text, _) in FRAGMENTS.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        procs[name] = (path, run_cli("serve", "--config", str(path)))
    for name, (path, proc) in procs.items():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (name, err)
        assert out == ""
        assert err == f"authgate: configuration error in {path}: {FRAGMENTS[name][1]}\n"


def test_a_short_secret_is_never_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTHGATE_TEST_CLIENT_SECRET", "hunter2-hunter2")
    text = config_text().replace(SECRET, "${AUTHGATE_TEST_CLIENT_SECRET}")
    with pytest.raises(ConfigError) as e:
        parse(text)
    assert "hunter2" not in str(e.value)


def test_defaults_of_a_confidential_and_a_public_client() -> None:
    registry = client_registry(parse(config_text()))
    web, native = registry.get("web"), registry.get("native")
    assert web is not None and native is not None
    assert web.token_endpoint_auth_method == "client_secret_basic"
    assert not web.is_public and native.is_public
    assert native.token_endpoint_auth_method == "none"
    assert web.allowed_scopes == {"openid", "profile", "email", "offline_access"}
    assert web.access_token_lifetime.total_seconds() == 300
    assert web.id_token_lifetime.total_seconds() == 300
    assert web.refresh_token_lifetime.total_seconds() == 30 * 86400
    assert web.code_lifetime.total_seconds() == 60
    assert web.id_token_signed_response_alg == "RS256"
    assert not web.first_party and not web.introspection
    # A confidential client is never called from a browser; a public one from the origins
    # of its http(s) redirect URIs (a private-use scheme has none).
    assert web.allowed_origins == frozenset()
    assert native.allowed_origins == {"http://127.0.0.1"}
    assert registry.get("nobody") is None
    assert [c.client_id for c in registry] == ["web", "native"]


def test_every_setting_reaches_the_client() -> None:
    text = config_text(
        spa={
            "name": "Single page",
            "type": "public",
            "redirect_uris": ["https://spa.example.com/cb", "https://spa.example.com:8443/cb"],
            "post_logout_redirect_uris": ["https://spa.example.com/bye"],
            "backchannel_logout_uri": "https://spa.example.com/backchannel",
            "allowed_scopes": ["openid", "email"],
            "first_party": True,
            "access_token_seconds": 120,
            "id_token_seconds": 600,
            "refresh_token_seconds": 3600,
            "code_seconds": 30,
            "id_token_signed_response_alg": "ES256",
            "allowed_origins": ["https://SPA.example.com:443", "https://other.example.com"],
        },
        api={
            "name": "Back end",
            "type": "confidential",
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": {"keys": [PUBLIC_JWK]},
            "redirect_uris": ["https://api.example.com/cb"],
            "introspection": True,
        },
    )
    registry = client_registry(parse(text))
    spa, api = registry.get("spa"), registry.get("api")
    assert spa is not None and api is not None
    assert spa.post_logout_redirect_uris == ("https://spa.example.com/bye",)
    assert spa.backchannel_logout_uri == "https://spa.example.com/backchannel"
    assert spa.allowed_scopes == {"openid", "email"}
    assert spa.first_party
    assert spa.access_token_lifetime.total_seconds() == 120
    assert spa.id_token_lifetime.total_seconds() == 600
    assert spa.refresh_token_lifetime.total_seconds() == 3600
    assert spa.code_lifetime.total_seconds() == 30
    assert spa.id_token_signed_response_alg == "ES256"
    assert spa.allowed_origins == {"https://spa.example.com", "https://other.example.com"}
    assert api.token_endpoint_auth_method == "private_key_jwt"
    assert api.jwks is not None and '"kid": "k1"' in api.jwks
    assert api.introspection


def test_secrets_are_kept_only_as_digests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTHGATE_TEST_CLIENT_SECRET", SECRET)
    text = config_text(web={"secrets": ["${AUTHGATE_TEST_CLIENT_SECRET}", OTHER_SECRET]})
    config = parse(text)
    web = client_registry(config).get("web")
    assert web is not None
    # Both secrets of a rotation authenticate; nothing else does.
    assert web.secret_matches(SECRET) and web.secret_matches(OTHER_SECRET)
    assert not web.secret_matches(SECRET[:-1]) and not web.secret_matches("")
    # Neither the configuration nor the client holds or shows a secret.
    for shown in (repr(config), repr(config.clients["web"]), repr(web), str(web.secrets)):
        assert SECRET not in shown and OTHER_SECRET not in shown
    held = [
        value
        for digest in web.secrets
        for value in (digest.salt, digest.digest)
        if SECRET.encode() in value or OTHER_SECRET.encode() in value
    ]
    assert held == []


def test_redirect_uris_a_public_native_client_may_register() -> None:
    text = config_text(
        native={
            "redirect_uris": [
                "com.example.app:/oauth2redirect",
                "com.example.app:/cb?x=1",
                "http://127.0.0.1/cb",
                "http://[::1]:8080/cb",
                "http://localhost/cb",
                "https://app.example.com/cb",
            ]
        }
    )
    native = client_registry(parse(text)).get("native")
    assert native is not None and len(native.redirect_uris) == 6


def test_the_issuer_is_the_public_url_else_the_local_address() -> None:
    public = {"rest": {"port": 8080, "public_url": "https://auth.example.com/"}}
    assert openid_issuer(parse(config_text(public))) == "https://auth.example.com"
    assert openid_issuer(parse(config_text())) == "http://127.0.0.1:8080"
    wildcard = {"rest": {"port": 9000, "host": "0.0.0.0"}}
    assert openid_issuer(parse(config_text(wildcard))) == "http://127.0.0.1:9000"
    ipv6 = {"rest": {"port": 9000, "host": "::1"}}
    assert openid_issuer(parse(config_text(ipv6))) == "http://[::1]:9000"


def test_production_with_an_https_public_url_is_accepted() -> None:
    change = {
        "environment": "production",
        "rest": {"port": 8080, "public_url": "https://auth.example.com"},
    }
    assert set(parse(config_text(change)).clients) == {"web", "native"}


def test_no_clients_is_the_default() -> None:
    data = copy.deepcopy(BASE)
    del data["clients"]
    config = parse(yaml.safe_dump(data))
    assert config.clients == {}
    assert len(client_registry(config)) == 0
