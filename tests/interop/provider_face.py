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
    }


@attrs.frozen
class Provider:
    """A running authgate with clients, and the fake identity provider behind it."""

    authgate: ServiceProcess
    fake: FakeIdP

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
    ) -> str:
        """The browser opens the authorization ``url`` and does what the pages ask (authgate's
        sign-in page: "{intent} with Google"; the fake provider signs ``user`` in) until
        authgate sends it to the registered redirect URI: that URL (code, state, iss)."""
        answer = await browser.authgate("GET", url, headers={"Accept": "text/html"})
        for _ in range(10):
            if answer.status in (302, 303) and answer.location is not None:
                target = urljoin(answer.url, answer.location)
                if target.startswith(REDIRECT_URI):
                    return target
                if target.startswith(self.fake.base_url):
                    answer = await self._back_from_provider(browser, target, user)
                else:
                    answer = await browser.authgate("GET", target, headers={"Accept": "text/html"})
            elif answer.status == 200:
                links = dict(parse_page(answer.text).links)
                choice = f"{intent} with Google"
                assert choice in links, (choice, answer.text[:800])
                start = urljoin(answer.url, links[choice])
                answer = await browser.authgate("GET", start, headers={"Accept": "text/html"})
            else:
                raise AssertionError(f"authgate answered {answer.status}: {answer.text[:500]}")
        raise AssertionError("too many steps before the redirect to the application")

    async def _back_from_provider(self, browser: Browser, url: str, user: FakeUser) -> Answer:
        back = await self.fake.authorize(url, user=user)
        assert back.method == "GET", back
        path = "/v1/auth/google/callback?" + urlencode(back.params)
        answer = await browser.authgate("GET", path, headers={"User-Agent": "interop"})
        assert answer.status == 302 and answer.location is not None, answer
        assert "error=" not in answer.location, (answer.location, self.authgate.log()[-2000:])
        return answer


@contextlib.asynccontextmanager
async def provider(tmp_path: Path, database_url: str) -> AsyncIterator[Provider]:
    """authgate serving the applications of :func:`clients` at ``http://127.0.0.1:PORT``."""
    port = free_port()
    async with FakeIdP() as fake:
        config = service_config(
            tmp_path,
            fake,
            port=port,
            database_url=database_url,
            overrides={"rest": {"public_url": f"http://127.0.0.1:{port}"}, "clients": clients()},
        )
        authgate = ServiceProcess(write_config(tmp_path, config))
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
