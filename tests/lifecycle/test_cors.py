"""An application on another origin (app.allowed_origins): CORS with credentials on the
account operations and sign-out, and the same-origin guard of cookie-authenticated changes
accepting exactly the service's own origin and those origins."""

from __future__ import annotations

from typing import Any

import pytest

from authgate.entrypoints.app.config import ConfigError
from tests.devidp.support import APP_URL, Service, StartService, to_config
from tests.lifecycle.test_lifecycle import bearer, signed_in

APP = "http://127.0.0.1:5173"  # the application's pages: same host, another port
OTHER_APP = "https://app.example.com:8443"
THIRD = "http://127.0.0.1:6006"  # a page on a third origin

CORS_HEADERS = (
    "Access-Control-Allow-Origin",
    "Access-Control-Allow-Credentials",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Headers",
    "Access-Control-Max-Age",
    "Access-Control-Expose-Headers",
)


@pytest.fixture
async def service(make_dev_service: StartService) -> Service:
    return await make_dev_service({"app": {"allowed_origins": [APP, OTHER_APP]}})


def preflight(origin: str, method: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "authorization",
    }


def no_cors(headers: Any) -> None:
    for name in CORS_HEADERS:
        assert name not in headers, name


def varies_on_origin(headers: Any) -> bool:
    return "origin" in [v.strip().lower() for v in headers.get("Vary", "").split(",")]


# -- preflight ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "method", "methods"),
    [
        ("/v1/account", "GET", "DELETE, GET"),
        ("/v1/account/providers/google", "DELETE", "DELETE"),
        ("/v1/account/sessions", "DELETE", "DELETE, GET"),
        ("/v1/account/export", "GET", "GET"),
        ("/v1/auth/logout", "POST", "POST"),
    ],
)
async def test_a_preflight_from_an_allowed_origin_is_answered(
    service: Service, path: str, method: str, methods: str
) -> None:
    response = await service.client.options(path, headers=preflight(APP, method))
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert response.headers["Access-Control-Allow-Credentials"] == "true"
    assert response.headers["Access-Control-Allow-Methods"] == methods
    assert response.headers["Access-Control-Allow-Headers"] == "Authorization, Content-Type"
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert varies_on_origin(response.headers)
    # the default port is not part of an origin: https://app.example.com:8443 stays as sent
    other = await service.client.options(path, headers=preflight(OTHER_APP, method))
    assert other.headers["Access-Control-Allow-Origin"] == OTHER_APP


@pytest.mark.parametrize(
    "origin",
    [
        THIRD,
        "http://127.0.0.1",  # the same host on another port
        "https://127.0.0.1:5173",  # another scheme
        "http://127.0.0.1:5173.evil.example",
        "null",
        "*",
        "not an origin",
    ],
)
async def test_a_preflight_from_another_origin_is_refused(service: Service, origin: str) -> None:
    response = await service.client.options(
        "/v1/account/providers/google", headers=preflight(origin, "DELETE")
    )
    assert response.status == 403
    assert await response.json() == {
        "error": "origin_not_allowed",
        "message": "pages of this origin may not call this operation from a browser",
    }
    no_cors(response.headers)
    assert varies_on_origin(response.headers)


async def test_options_that_is_no_preflight_is_not_an_operation(service: Service) -> None:
    for headers in ({}, {"Origin": APP}, {"Access-Control-Request-Method": "GET"}):
        response = await service.client.options("/v1/account", headers=headers)
        assert response.status == 405, headers
        assert set(response.headers["Allow"].split(",")) == {"GET", "DELETE"}
        no_cors(response.headers)
    # logout is a static path beside /v1/auth/{provider}: its own methods only
    response = await service.client.options("/v1/auth/logout")
    assert response.status == 405
    assert response.headers["Allow"] == "POST"


async def test_operations_without_cors_answer_no_preflight(service: Service) -> None:
    # The sign-in start is a navigation, never a cross-origin fetch.
    response = await service.client.options("/v1/auth/google", headers=preflight(APP, "GET"))
    assert response.status == 405
    no_cors(response.headers)
    answer = await service.client.get("/.well-known/jwks.json", headers={"Origin": APP})
    no_cors(answer.headers)


# -- actual requests ------------------------------------------------------------------------


async def test_the_account_is_readable_with_the_cookie_from_an_allowed_origin(
    service: Service,
) -> None:
    browser = await signed_in(service, "google")
    response = await browser.request("GET", "/v1/account", {"Origin": APP})
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert response.headers["Access-Control-Allow-Credentials"] == "true"
    assert varies_on_origin(response.headers)
    assert (await response.json())["email"] == "ada@example.test"


async def test_errors_carry_the_cors_headers_too(service: Service) -> None:
    # The page must be able to read why (401, 403, 409...), not just that it failed.
    response = await service.client.get("/v1/account", headers={"Origin": APP})
    assert response.status == 401
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert response.headers["Access-Control-Expose-Headers"] == "WWW-Authenticate"
    assert varies_on_origin(response.headers)


FOREIGN = (THIRD, "null", "*", "http://127.0.0.1:5173.evil.example", "https://127.0.0.1:5173")


async def test_a_request_with_the_cookie_from_another_origin_is_refused_before_it_runs(
    service: Service,
) -> None:
    browser = await signed_in(service, "google", "facebook")
    sessions = await sessions_of(service, browser)
    operations = [
        ("GET", "/v1/account"),
        ("GET", "/v1/account/sessions"),
        ("GET", "/v1/account/export"),
        ("DELETE", "/v1/account/providers/facebook"),
        ("DELETE", "/v1/account/sessions/some-session"),
        ("DELETE", "/v1/account/sessions"),
        ("DELETE", "/v1/account"),
        ("POST", "/v1/auth/logout"),
        ("POST", "/v1/auth/logout?everywhere=true"),
    ]
    for origin in FOREIGN:
        for method, path in operations:
            # A "simple" GET or POST with credentials needs no preflight: it reaches the
            # service, the browser attaching the SameSite=Lax cookie (same site, other origin).
            response = await browser.request(method, path, {"Origin": origin})
            assert response.status == 403, (origin, method, path)
            body = await response.json()
            assert body["error"] == "origin_not_allowed", (origin, path)
            assert body["message"]
            no_cors(response.headers)
            assert varies_on_origin(response.headers)
            assert session_cookie_set(response) is False, path
    # Nothing ran: the same sessions live, both providers linked, the account there.
    assert await sessions_of(service, browser) == sessions
    listed = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    assert [p["provider"] for p in (await listed.json())["providers"]] == ["google", "facebook"]
    # The same cookie from the service's own pages (no Origin, or its own) and the allowed one.
    for headers in ({}, {"Origin": service.base}, {"Origin": APP}):
        response = await browser.request("GET", "/v1/account", headers)
        assert response.status == 200, headers
        assert varies_on_origin(response.headers)
        if headers.get("Origin") != APP:
            no_cors(response.headers)


async def sessions_of(service: Service, browser: Any) -> list[dict[str, Any]]:
    listed = await service.client.get("/v1/account/sessions", headers=bearer(browser.session))
    sessions: list[dict[str, Any]] = (await listed.json())["sessions"]
    return sessions


def session_cookie_set(response: Any) -> bool:
    return any(h.startswith("session=") for h in response.headers.getall("Set-Cookie", []))


async def test_a_bearer_request_from_another_origin_is_no_browser_page_and_is_answered(
    service: Service,
) -> None:
    # A page cannot send Authorization to another origin without a preflight, which a
    # disallowed origin fails: with a foreign Origin and no cookie, the client is no browser
    # page (a tool, a proxy), and the bearer token is its own credential.
    browser = await signed_in(service, "google")
    for origin in FOREIGN:
        response = await service.client.get(
            "/v1/account", headers={**bearer(browser.session), "Origin": origin}
        )
        assert response.status == 200, origin
        no_cors(response.headers)
    # With the browser's cookies beside it, the request is a page's: refused.
    response = await browser.request(
        "GET", "/v1/account", {**bearer(browser.session), "Origin": THIRD}
    )
    assert response.status == 403
    assert (await response.json())["error"] == "origin_not_allowed"


async def test_never_a_wildcard(service: Service) -> None:
    browser = await signed_in(service, "google")
    answers = [
        await browser.request("GET", "/v1/account", {"Origin": origin})
        for origin in (APP, THIRD, "*", "null")
    ] + [
        await service.client.options("/v1/account", headers=preflight(origin, "GET"))
        for origin in (APP, THIRD, "*")
    ]
    for answer in answers:
        assert answer.headers.get("Access-Control-Allow-Origin", "") != "*"


# -- cookie-authenticated changes -----------------------------------------------------------


async def test_unlink_by_cookie_from_an_allowed_application_origin(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook", "apple")
    # Chromium reports a page on another port of the same host as same-site.
    response = await browser.request(
        "DELETE",
        "/v1/account/providers/facebook",
        {"Origin": APP, "Sec-Fetch-Site": "same-site"},
    )
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP
    response = await browser.request(
        "DELETE",
        "/v1/account/providers/apple",
        {"Origin": OTHER_APP, "Sec-Fetch-Site": "cross-site"},
    )
    assert response.status == 200


async def test_unlink_by_cookie_from_a_third_origin_is_refused(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    for headers, refusal in (
        ({"Origin": THIRD, "Sec-Fetch-Site": "same-site"}, "origin_not_allowed"),
        ({"Origin": THIRD}, "origin_not_allowed"),
        ({"Origin": "http://127.0.0.1:5173.evil.example"}, "origin_not_allowed"),
        # the default app.url is no longer trusted once allowed_origins are configured
        ({"Origin": APP_URL, "Sec-Fetch-Site": "cross-site"}, "origin_not_allowed"),
        # no Origin: only the service's own pages
        ({"Sec-Fetch-Site": "same-site"}, "cross_site_request"),
        # the service's own origin is same-origin, never reported otherwise by a browser
        ({"Origin": service.base, "Sec-Fetch-Site": "same-site"}, "cross_site_request"),
    ):
        response = await browser.request("DELETE", "/v1/account/providers/facebook", headers)
        assert response.status == 403, headers
        assert (await response.json())["error"] == refusal, headers
    listed = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    assert [p["provider"] for p in (await listed.json())["providers"]] == ["google", "facebook"]


async def test_sign_out_by_cookie_from_an_allowed_origin(service: Service) -> None:
    refused = await signed_in(service, "google")
    response = await refused.request("POST", "/v1/auth/logout", {"Origin": THIRD})
    assert response.status == 403
    no_cors(response.headers)
    assert (await refused.request("GET", "/v1/account")).status == 200

    browser = await signed_in(service, "google")
    response = await browser.request(
        "POST", "/v1/auth/logout", {"Origin": APP, "Sec-Fetch-Site": "same-site"}
    )
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert response.headers["Access-Control-Allow-Credentials"] == "true"
    assert browser.session is None
    assert (await service.client.get("/v1/account", headers=bearer(refused.session))).status == 200


# -- configuration --------------------------------------------------------------------------


async def test_the_default_is_the_origin_of_app_url(make_dev_service: StartService) -> None:
    service = await make_dev_service({"app": {"url": "https://App.example.com:443/demo"}})
    assert service.config.app.allowed_origins == ["https://app.example.com"]
    response = await service.client.options(
        "/v1/account", headers=preflight("https://app.example.com", "GET")
    )
    assert response.headers["Access-Control-Allow-Origin"] == "https://app.example.com"


async def test_no_allowed_origins_no_cors(make_dev_service: StartService) -> None:
    service = await make_dev_service({"app": {"allowed_origins": []}})
    response = await service.client.options("/v1/account", headers=preflight(APP_URL, "GET"))
    assert response.status == 403  # no origin may: every preflight is refused
    no_cors(response.headers)
    browser = await signed_in(service, "google", "facebook")
    for method, path in (("GET", "/v1/account"), ("DELETE", "/v1/account/providers/facebook")):
        answer = await browser.request(method, path, {"Origin": APP_URL})
        assert answer.status == 403
        assert (await answer.json())["error"] == "origin_not_allowed"
        no_cors(answer.headers)
    assert (await browser.request("GET", "/v1/account", {"Origin": service.base})).status == 200


@pytest.mark.parametrize(
    "value", ["*", "https://app.example.com/", "https://app.example.com/app", "app.example.com"]
)
def test_allowed_origins_must_be_origins(value: str) -> None:
    data = {
        "rest": {"port": 8080},
        "otel": {"service": {"name": "x"}, "sdk": {"disabled": True}},
        "app": {"url": "https://app.example.com", "allowed_origins": [value]},
    }
    if value == "https://app.example.com/":  # a trailing slash names the same origin
        assert to_config(data).app.allowed_origins == [value]
        return
    with pytest.raises(ConfigError, match=r"app\.allowed_origins"):
        to_config(data)


@pytest.mark.parametrize(
    "value", ["api.example.com", "ftp://api.example.com", "https://*.example.com"]
)
def test_public_url_must_name_an_origin(value: str) -> None:
    # Its origin is the service's own, which other-origin refusals and the guard compare with.
    data = {
        "rest": {"port": 8080, "public_url": value},
        "otel": {"service": {"name": "x"}, "sdk": {"disabled": True}},
    }
    with pytest.raises(ConfigError, match=r"rest\.public_url"):
        to_config(data)
    data["rest"]["public_url"] = "https://api.example.com/auth/"  # a path: its origin counts
    assert to_config(data).rest.public_url == "https://api.example.com/auth/"


# -- navigations (no Origin) ----------------------------------------------------------------


async def test_a_link_start_navigated_from_an_allowed_origin_passes_the_guard(
    service: Service,
) -> None:
    from tests.lifecycle.test_link_and_origin import linked, start_link

    browser = await signed_in(service, "google")
    # A GET navigation carries no Origin; from the application's page it is same-site, and
    # its Referer names the application's origin.
    refused = [
        {"Sec-Fetch-Site": "same-site", "Referer": f"{THIRD}/demo/dashboard"},
        {"Sec-Fetch-Site": "same-site", "Referer": "http://127.0.0.1:5173.evil.example/x"},
        {"Sec-Fetch-Site": "same-site", "Referer": "/demo/dashboard"},
        {"Sec-Fetch-Site": "same-site"},
    ]
    for headers in refused:
        response = await start_link(browser, "facebook", headers)
        assert response.status == 403, headers
        assert (await response.json())["error"] == "cross_site_request"
    response = await start_link(
        browser, "facebook", {"Sec-Fetch-Site": "same-site", "Referer": f"{APP}/demo/dashboard"}
    )
    assert response.status == 200, await response.text()
    assert await linked(service, browser) == ["google"]  # started, not yet linked
