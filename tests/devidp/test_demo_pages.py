"""The demo page (development only) and the docs page, served from package files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from authgate.entrypoints.devidp.keys import ensure_apple_key_file
from tests.devidp.support import Service


async def test_demo_pages_are_one_html_page(make_dev_service: Any) -> None:
    service: Service = await make_dev_service()
    for path in ("/demo", "/demo/", "/demo/login", "/demo/onboarding", "/demo/dashboard"):
        response = await service.client.get(path, allow_redirects=False)
        assert response.status == 200, path
        assert response.content_type == "text/html"
        html = await response.text()
        assert '<script src="/demo/assets/demo.js" defer></script>' in html
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "http" not in csp  # nothing from another origin
        assert response.headers["Cache-Control"] == "no-store"


async def test_the_root_leads_to_the_demo(service: Service) -> None:
    response = await service.client.get("/", allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == "/demo"


async def test_demo_assets(service: Service) -> None:
    for name, kind in (
        ("demo.js", "text/javascript"),
        ("demo.css", "text/css"),
        ("favicon.svg", "image/svg+xml"),
    ):
        response = await service.client.get(f"/demo/assets/{name}")
        assert response.status == 200
        assert response.content_type == kind
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "//cdn" not in await response.text()


async def test_demo_settings_name_the_providers_and_their_callbacks(service: Service) -> None:
    settings = await (await service.client.get("/demo/config.json")).json()
    assert settings["base"] == "/demo"
    assert settings["pages"] == {
        "login": "/login",
        "onboarding": "/onboarding",
        "dashboard": "/dashboard",
    }
    providers = settings["providers"]
    assert [p["id"] for p in providers] == ["google", "facebook", "apple"]
    assert [p["label"] for p in providers] == ["Google", "Facebook", "Apple"]
    port = service.config.rest.port
    assert providers[2]["callbackUrls"] == [
        f"http://127.0.0.1:{port}/v1/auth/apple/callback",
        f"http://localhost:{port}/v1/auth/apple/callback",
    ]
    text = str(settings)
    assert "dev-google-secret" not in text and "dev-facebook-secret" not in text


async def test_demo_continues_on_the_application_host(make_dev_service: Any) -> None:
    # Cookies are per host: a visitor on localhost is sent to app.url's host, where the
    # callbacks will land.
    service: Service = await make_dev_service({"app": {"url": "http://127.0.0.1:8080/demo"}})
    response = await service.client.get(
        "/demo/login?error=access_denied",
        headers={"Host": "localhost:8080"},
        allow_redirects=False,
    )
    assert response.status == 302
    assert response.headers["Location"] == "http://127.0.0.1:8080/demo/login?error=access_denied"
    same = await service.client.get(
        "/demo/login", headers={"Host": "127.0.0.1:8080"}, allow_redirects=False
    )
    assert same.status == 200


async def test_docs_page_and_swagger_ui_assets(service: Service) -> None:
    page = await service.client.get("/docs")
    assert page.status == 200 and page.content_type == "text/html"
    html = await page.text()
    assert "/docs/assets/swagger-ui-bundle.js" in html and "https://" not in html
    script = await (await service.client.get("/docs/assets/docs.js")).text()
    assert 'url: "/openapi.json"' in script and "validatorUrl: null" in script
    bundle = await service.client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.status == 200 and bundle.content_type == "text/javascript"
    assert int(bundle.headers["Content-Length"]) > 100_000
    css = await service.client.get("/docs/assets/swagger-ui.css")
    assert css.status == 200 and css.content_type == "text/css"
    missing = await service.client.get("/docs/assets/../../etc/passwd")
    assert missing.status == 404


async def test_production_has_docs_but_no_demo_and_no_dev_provider(
    make_dev_service: Any, tmp_path: Path
) -> None:
    ensure_apple_key_file(tmp_path / "var" / "apple.pem")
    service: Service = await make_dev_service(
        {"environment": "production", "dev": {"identity_provider": False}}
    )
    assert (await service.client.get("/docs")).status == 200
    assert (await service.client.get("/demo")).status == 404
    assert (await service.client.get("/")).status == 404
    assert (await service.client.get("/demo/config.json")).status == 404
    assert (await service.client.get("/dev/idp/jwks")).status == 404


def _demo_app(port: int) -> dict[str, Any]:
    """The demo application as config.default.yaml registers it."""
    base = f"http://127.0.0.1:{port}"
    return {
        "demo-app": {
            "name": "Demo application",
            "type": "public",
            "redirect_uris": [f"{base}/demo/app/callback"],
            "post_logout_redirect_uris": [f"{base}/demo/app"],
            "allowed_scopes": ["openid", "profile", "email"],
        }
    }


async def test_the_demo_application_is_served_when_registered(make_dev_service: Any) -> None:
    plain: Service = await make_dev_service()
    port = 8080  # the registered addresses' port; requests name that host
    here = {"Host": f"127.0.0.1:{port}"}
    # Without the client registered: no second application, and the demo page asks for no
    # applications (the service does not serve them).
    assert (await plain.client.get("/demo/app")).status == 404
    assert (await (await plain.client.get("/demo/config.json")).json())["apps"] is False

    service: Service = await make_dev_service({"clients": _demo_app(port)})
    for path in ("/demo/app", "/demo/app/callback"):
        response = await service.client.get(path, headers=here, allow_redirects=False)
        assert response.status == 200, path
        html = await response.text()
        assert '<script src="/demo/assets/app.js" defer></script>' in html
        csp = response.headers["Content-Security-Policy"]
        assert "connect-src 'self'" in csp and "http" not in csp
    script = await service.client.get("/demo/assets/app.js")
    assert script.status == 200 and script.content_type == "text/javascript"
    settings = await (await service.client.get("/demo/app/config.json")).json()
    assert settings == {
        "clientId": "demo-app",
        "redirectUri": f"http://127.0.0.1:{port}/demo/app/callback",
        "postLogoutRedirectUri": f"http://127.0.0.1:{port}/demo/app",
        "scope": "openid profile email",
        "home": "/demo/app",
        "callbackPath": "/demo/app/callback",
    }
    assert (await (await service.client.get("/demo/config.json")).json())["apps"] is True
    # Its tokens and callback belong to the registered origin: another host continues there.
    moved = await service.client.get(
        "/demo/app", headers={"Host": f"localhost:{port}"}, allow_redirects=False
    )
    assert moved.status == 302
    assert moved.headers["Location"] == f"http://127.0.0.1:{port}/demo/app"


async def test_production_serves_no_demo_application(make_dev_service: Any, tmp_path: Path) -> None:
    ensure_apple_key_file(tmp_path / "var" / "apple.pem")
    production: Service = await make_dev_service(
        {
            "environment": "production",
            "rest": {"public_url": "https://auth.example.test"},
            "dev": {"identity_provider": False},
            "clients": _demo_app(8080),
        }
    )
    # The provider face is served (the client is registered), the demo application is not.
    discovery = await production.client.get("/.well-known/openid-configuration")
    assert discovery.status == 200
    for path in ("/demo/app", "/demo/app/callback", "/demo/app/config.json"):
        assert (await production.client.get(path)).status == 404, path
    assert (await production.client.get("/demo/assets/app.js")).status == 404
