"""Starting a link is an account change: scope ``account:manage`` and, with the session
cookie, the same-origin guard; the guard compares whole origins (scheme, host, port) with
the service's own public origin."""

from __future__ import annotations

from urllib.parse import urlencode

import aiohttp

from tests.devidp.support import Browser, Service, StartService

from .test_lifecycle import bearer, reissue, signed_in


async def start_link(
    browser: Browser, provider: str, headers: dict[str, str]
) -> aiohttp.ClientResponse:
    query = urlencode({"redirect_uri": browser.service.callback(provider), "intent": "link"})
    return await browser.request(
        "GET", f"/v1/auth/{provider}?{query}", {"Accept": "application/json", **headers}
    )


async def linked(service: Service, browser: Browser) -> list[str]:
    listed = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    return [p["provider"] for p in (await listed.json())["providers"]]


async def test_a_cross_site_link_start_by_cookie_is_refused(service: Service) -> None:
    browser = await signed_in(service, "google")
    # A top-level GET from another site: the SameSite=Lax cookie goes with it.
    for headers in (
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "https://evil.example"},
        {},  # neither header: not provably from this site
    ):
        response = await start_link(browser, "facebook", headers)
        assert response.status == 403, headers
        assert (await response.json())["error"] == "cross_site_request"
    assert await linked(service, browser) == ["google"]


async def test_a_link_start_by_cookie_from_the_service_own_page_is_allowed(
    service: Service,
) -> None:
    browser = await signed_in(service, "google")
    response = await start_link(browser, "facebook", {"Sec-Fetch-Site": "same-origin"})
    assert response.status == 200, await response.text()


async def test_a_link_start_needs_the_manage_scope(service: Service) -> None:
    browser = await signed_in(service, "google")
    read_only = reissue(service, browser.session or "", scope="account:read")
    by_bearer = await start_link(Browser(service), "facebook", bearer(read_only))
    assert by_bearer.status == 403
    assert (await by_bearer.json())["error"] == "insufficient_scope"
    browser.cookies["session"] = read_only
    by_cookie = await start_link(browser, "facebook", {"Sec-Fetch-Site": "same-origin"})
    assert by_cookie.status == 403
    assert (await by_cookie.json())["error"] == "insufficient_scope"


async def test_a_link_start_by_bearer_needs_no_origin_check(service: Service) -> None:
    browser = await signed_in(service, "google")
    response = await start_link(
        Browser(service), "facebook", {**bearer(browser.session), "Sec-Fetch-Site": "cross-site"}
    )
    assert response.status == 200, await response.text()


async def test_the_guard_compares_the_scheme_too(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    # Same host and port as the service, but https: another origin.
    other_scheme = service.base.replace("http://", "https://")
    response = await browser.request(
        "DELETE", "/v1/account/providers/facebook", {"Origin": other_scheme}
    )
    assert response.status == 403
    assert (await response.json())["error"] == "origin_not_allowed"  # not even the operation
    assert await linked(service, browser) == ["google", "facebook"]


async def test_with_a_public_url_only_that_origin_is_the_service_own(
    make_dev_service: StartService,
) -> None:
    public = "https://auth.example.com"
    service = await make_dev_service({"rest": {"public_url": public + "/"}})
    browser = await signed_in(service, "google", "facebook")
    # The Host the request was made to is no longer taken as the service's own origin.
    refused = await browser.request(
        "DELETE", "/v1/account/providers/facebook", {"Origin": service.base}
    )
    assert refused.status == 403
    allowed = await browser.request(
        "DELETE", "/v1/account/providers/facebook", {"Origin": public + ":443"}
    )
    assert allowed.status == 200, await allowed.text()
    assert await linked(service, browser) == ["google"]
