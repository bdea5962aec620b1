"""authgate's OpenID Provider face as outside client libraries meet it: a real
``authgate serve`` (on loopback, its issuer its own address) with the fake identity provider
behind it for the person's sign-in, applications registered under ``clients:``, and a browser
that carries a person through an authorization request the library built.

The libraries (openid-client, Authlib) make every request of the application; the test plays
only the browser, as the person's user agent would.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import attrs
from joserfc.jwk import RSAKey

from bench.harness import ServiceProcess, free_port, service_config, write_config
from tests.fakeidp import FakeIdP, FakeUser
from tests.interop.support import Answer, Browser
from tests.openid.harness import parse_page

PERSON = FakeUser(sub="grace-1", email="grace@example.com", name="Grace Hopper")
NODE_CLIENT = "node-app"
NODE_SECRET = "node-app-secret-of-more-than-thirty-two-characters"
AUTHLIB_CLIENT = "authlib-app"
AUTHLIB_SECRET = "authlib-app-secret-of-more-than-thirty-two-characters"
JWT_CLIENT = "authlib-jwt-app"
REDIRECT_URI = "https://rp.example.com/callback"
LOGOUT_URI = "https://rp.example.com/signed-out"
JWT_KID = "authlib-app-key-1"
JWT_KEY = RSAKey.generate_key(2048, parameters={"kid": JWT_KID, "use": "sig"})
POST_CLIENT = "post-app"  # client_secret_post, not first party: the consent page
POST_SECRET = "post-app-secret-of-more-than-thirty-two-characters"
POST_NAME = "Third-party app"
PUBLIC_CLIENT = "public-app"  # a public client: no secret, PKCE alone
ES256_CLIENT = "es256-app"  # ID tokens signed ES256
ES256_SECRET = "es256-app-secret-of-more-than-thirty-two-characters"
DEVICE_CLIENT = "device-app"  # a command-line tool: the device authorization grant (RFC 8628)
DEVICE_NAME = "Command-line tool"


def clients() -> dict[str, Any]:
    """The applications the libraries play: confidential, first party (no consent page), allowed
    to introspect; one authenticating with ``private_key_jwt`` by an inline key set."""
    common = {
        "type": "confidential",
        "redirect_uris": [REDIRECT_URI],
        "post_logout_redirect_uris": [LOGOUT_URI],
        "first_party": True,
        "introspection": True,
    }
    return {
        NODE_CLIENT: {**common, "name": "openid-client app", "secrets": [NODE_SECRET]},
        AUTHLIB_CLIENT: {**common, "name": "Authlib app", "secrets": [AUTHLIB_SECRET]},
        JWT_CLIENT: {
            **common,
            "name": "Authlib private_key_jwt app",
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": {"keys": [JWT_KEY.as_dict(private=False)]},
        },
        POST_CLIENT: {
            **common,
            "name": POST_NAME,
            "first_party": False,
            "token_endpoint_auth_method": "client_secret_post",
            "secrets": [POST_SECRET],
        },
        PUBLIC_CLIENT: {
            "type": "public",
            "name": "Public app",
            "token_endpoint_auth_method": "none",
            "redirect_uris": [REDIRECT_URI],
            "post_logout_redirect_uris": [LOGOUT_URI],
            "first_party": True,
        },
        ES256_CLIENT: {
            **common,
            "name": "ES256 app",
            "secrets": [ES256_SECRET],
            "id_token_signed_response_alg": "ES256",
        },
        DEVICE_CLIENT: {
            "type": "public",
            "name": DEVICE_NAME,
            "grant_types": ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
            "first_party": True,
        },
    }


@attrs.frozen
class Back:
    """What the application receives at its redirect URI: the redirect's URL (``url``), or
    with ``response_mode=form_post`` the form the browser posted (``form``; ``url`` is then
    the form's action), and the pages of authgate's the person answered on the way
    (``"sign-in"``, ``"consent"``)."""

    url: str
    form: dict[str, str] | None
    pages: tuple[str, ...]


@attrs.frozen
class Provider:
    """A running authgate with clients, and the fake identity provider behind it."""

    authgate: ServiceProcess
    fake: FakeIdP
    consent_pages: list[str] = attrs.field(factory=list)  # the consent pages answered

    @property
    def issuer(self) -> str:
        return self.authgate.url

    def browser(self) -> Browser:
        return Browser(self.authgate.url)

    async def authorize(
        self,
        browser: Browser,
        url: str,
        *,
        user: FakeUser = PERSON,
        intent: str = "Create an account",
        back_to: str = REDIRECT_URI,
    ) -> str:
        """The browser opens the authorization ``url`` and does what the pages ask (authgate's
        sign-in page: "{intent} with Google"; the fake provider signs ``user`` in; a consent
        page is approved) until authgate sends it to the registered redirect URI by a
        redirect: that URL (code, state, iss)."""
        back = await self.through(browser, url, user=user, intent=intent, back_to=back_to)
        assert back.form is None, back
        return back.url

    async def through(
        self,
        browser: Browser,
        url: str,
        *,
        user: FakeUser = PERSON,
        intent: str = "Create an account",
        decision: str = "approve",
        back_to: str = REDIRECT_URI,
    ) -> Back:
        """:meth:`authorize`, also for a ``form_post`` answer (the form the browser posts to
        the redirect URI ``back_to``); the consent page is answered with ``decision``."""
        pages: list[str] = []
        answer = await browser.authgate("GET", url, headers={"Accept": "text/html"})
        for _ in range(12):
            if answer.status in (302, 303) and answer.location is not None:
                target = urljoin(answer.url, answer.location)
                if target.startswith(back_to):
                    return Back(target, None, tuple(pages))
                if target.startswith(self.fake.base_url):
                    answer = await self._back_from_provider(browser, target, user)
                else:
                    answer = await browser.authgate("GET", target, headers={"Accept": "text/html"})
            elif answer.status == 200:
                page = parse_page(answer.text)
                form = page.forms[0] if page.forms else None
                if form is not None and form["action"].startswith(back_to):
                    # the form_post page: its script posts the form to the application
                    return Back(form["action"], dict(form["fields"]), tuple(pages))
                if form is not None and any(n == "decision" for n, _ in form["buttons"]):
                    pages.append("consent")
                    answer = await self._answer_consent(browser, answer, form, decision)
                    continue
                pages.append("sign-in")
                links = dict(page.links)
                choice = f"{intent} with Google"
                assert choice in links, (choice, answer.text[:800])
                start = urljoin(answer.url, links[choice])
                answer = await browser.authgate("GET", start, headers={"Accept": "text/html"})
            else:
                raise AssertionError(f"authgate answered {answer.status}: {answer.text[:500]}")
        raise AssertionError("too many steps before the redirect to the application")

    async def _answer_consent(
        self, browser: Browser, page: Answer, form: dict[str, Any], decision: str
    ) -> Answer:
        """The person presses the consent page's button: its form, posted as a browser posts
        it from authgate's own page (same origin, the consent cookie it set)."""
        self.consent_pages.append(page.text)
        fields = [*form["fields"], ("decision", decision)]
        return await browser.authgate(
            "POST",
            urljoin(page.url, form["action"]),
            data=fields,
            headers={
                "Accept": "text/html",
                "Origin": self.issuer,
                "Sec-Fetch-Site": "same-origin",
            },
        )

    async def _back_from_provider(self, browser: Browser, url: str, user: FakeUser) -> Answer:
        back = await self.fake.authorize(url, user=user)
        assert back.method == "GET", back
        path = "/v1/auth/google/callback?" + urlencode(back.params)
        answer = await browser.authgate("GET", path, headers={"User-Agent": "interop"})
        assert answer.status == 302 and answer.location is not None, answer
        assert "error=" not in answer.location, (answer.location, self.authgate.log()[-2000:])
        return answer


@contextlib.asynccontextmanager
async def provider(
    tmp_path: Path,
    database_url: str,
    *,
    overrides: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Provider]:
    """authgate serving the applications of :func:`clients` at ``http://127.0.0.1:PORT``;
    ``overrides``: top-level configuration keys to set besides (``clients`` replaces them);
    ``env``: the process's environment."""
    port = free_port()
    async with FakeIdP() as fake:
        config = service_config(
            tmp_path,
            fake,
            port=port,
            database_url=database_url,
            overrides={
                "rest": {"public_url": f"http://127.0.0.1:{port}"},
                "clients": clients(),
                # Devices poll every second here (five by default): the tests wait less.
                "device": {"interval_seconds": 1},
                **(overrides or {}),
            },
        )
        authgate = ServiceProcess(write_config(tmp_path, config), env=env)
        await authgate.start()
        try:
            yield Provider(authgate, fake)
        finally:
            await authgate.stop()
        log = authgate.log()
        assert "Traceback" not in log, log[-3000:]
        # no code, token or secret of the flows in authgate's log
        assert "code=" not in log and "eyJ" not in log and "secret-of" not in log, log[-3000:]


def one_json_line(text: str) -> dict[str, Any]:
    value = json.loads(text)
    assert isinstance(value, dict), text
    return value
