"""docs/openid-provider.md's "Register your app in ten minutes", run as written: the
``clients:`` entries the reader pastes (its ``yaml title="config.yaml"`` blocks) appended to a
copy of the default configuration, a real ``authgate serve`` on it, and the page's two
programs (``python title="web_app.py"``, Authlib; ``js title="sign-in.mjs"``, openid-client)
written to files and run unchanged, with only the environment variables the page names.

The test plays the person's browser (authgate's sign-in and consent pages, the development
identity provider's page of test users); the programs do everything an application does:
discovery, the authorization request with PKCE S256, the token exchange, the ID token's
verification and userinfo. What each program finally shows (the person's name and email, from
userinfo) is what the test asserts, with the request each one built.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import aiohttp
import attrs
import pytest

from tests.devidp.support import keep_cookies
from tests.interop.support import RP_DIR
from tests.openid.harness import parse_page
from tests.support.ports import free_ports
from tests.support.served import stop, wait_ready

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "openid-provider.md"
GUIDE = "## Register your app in ten minutes"
BLOCK = re.compile(r'^```(\w+) title="([^"]+)"\n(.*?)^```$', re.MULTILINE | re.DOTALL)
WITHIN = 60  # seconds for a program's step on a loaded machine
SECRET = secrets.token_urlsafe(32)  # MY_WEB_APP_SECRET, as `openssl rand -base64 32` makes one


def blocks(language: str, title: str) -> list[str]:
    """The guide's code blocks marked ```{language} title="{title}"``` in order."""
    text = PAGE.read_text()
    assert GUIDE in text, f"{PAGE} has no {GUIDE!r}"
    guide = text[text.index(GUIDE) :]
    guide = guide[: guide.find("\n## ", len(GUIDE))]
    return [body for lang, name, body in BLOCK.findall(guide) if (lang, name) == (language, title)]


def program(language: str, title: str) -> str:
    [text] = blocks(language, title)
    return text


def configuration() -> str:
    """The default configuration with every ``clients:`` entry of the guide pasted under its
    ``clients:`` (its last section), as the guide tells the reader."""
    default = (ROOT / "config.default.yaml").read_text()
    last_section = [line for line in default.splitlines() if re.match(r"^\w", line)][-1]
    assert last_section == "clients:", last_section
    pasted = blocks("yaml", "config.yaml")
    assert len(pasted) == 2, pasted  # the web application's and the command-line tool's
    entries = []
    for block in pasted:
        first, _, rest = block.partition("\n")
        assert first == "clients:", block
        entries.append(rest)
    return default.rstrip("\n") + "\n" + "".join(entries)


@attrs.frozen
class Served:
    issuer: str
    env: Mapping[str, str]  # what the reader's shell holds: the secret, the ports


async def _answering(url: str, process: asyncio.subprocess.Process) -> bool:
    """Whether the program answers ``url`` (200) before it exits or time runs out."""
    deadline = time.monotonic() + WITHIN
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline and process.returncode is None:
            try:
                async with http.get(url) as answer:
                    if answer.status == 200:
                        return True
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``authgate serve --config config.yaml`` on the guide's configuration; the programs
    are run from the same folder."""
    workdir = tmp_path_factory.mktemp("register-your-app")
    (workdir / "config.yaml").write_text(configuration())
    port, metrics_port, web_app_port = free_ports(3)
    issuer = f"http://localhost:{port}"
    env = {
        "PORT": str(port),
        "METRICS_PORT": str(metrics_port),
        "OTEL_SDK_DISABLED": "true",
        "MY_WEB_APP_SECRET": SECRET,
        "WEB_APP_PORT": str(web_app_port),
        "AUTHGATE_ISSUER": issuer,
    }
    log = workdir / "serve.log"
    authgate = Path(sys.executable).with_name("authgate")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(authgate), "serve", "--config", "config.yaml"],
            cwd=workdir,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_ready(issuer, process, log)
        yield Served(issuer, env)
    finally:
        stop(process)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert "code=" not in text and "eyJ" not in text and SECRET not in text, text[-3000:]


class Browser:
    """The person's browser: follows what authgate, the development provider and the
    application send it, one cookie jar for 127.0.0.1 (browsers keep cookies by host, not
    port; authgate's ``__Host-`` cookies are carried on loopback http as a browser there
    does)."""

    def __init__(self) -> None:
        self.cookies: dict[str, str] = {}
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())
        self.pages: list[str] = []  # the kinds of page the person answered

    async def close(self) -> None:
        await self.http.close()

    async def go(
        self, method: str, url: str, data: Any = None, headers: Mapping[str, str] | None = None
    ) -> tuple[int, str, str]:
        """One request: its status, the Location (or ""), the body."""
        sent = {"Accept": "text/html", "User-Agent": "register-your-app"}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        async with self.http.request(
            method, url, data=data, headers={**sent, **(headers or {})}, allow_redirects=False
        ) as answer:
            keep_cookies(self.cookies, answer.headers.getall("Set-Cookie", ()))
            return answer.status, answer.headers.get("Location", ""), await answer.text()

    async def sign_in(self, url: str, *, issuer: str, user: str, until: str) -> str:
        """Opens the authorization ``url`` and answers each page (authgate's sign-in page:
        "Create an account with Google"; the development provider: ``user``; the consent
        page: allow) until a redirect leaves for ``until``: that URL."""
        method, data, headers = "GET", None, None
        for _ in range(15):
            status, location, body = await self.go(method, url, data, headers)
            method, data, headers = "GET", None, None
            if status in (302, 303):
                url = urljoin(url, location)
                if url.startswith(until):
                    return url
                continue
            assert status == 200, (status, url, body[:800])
            page = parse_page(body)
            form = page.forms[0] if page.forms else None
            buttons = {name for name, _ in form["buttons"]} if form else set()
            if "user" in buttons:  # the development provider's test users
                self.pages.append("provider")
                assert form is not None
                method, data = "POST", [*form["fields"], ("user", user)]
                url = urljoin(url, form["action"])
            elif "decision" in buttons:  # authgate's consent page
                self.pages.append("consent")
                assert form is not None
                method, data = "POST", [*form["fields"], ("decision", "approve")]
                headers = {"Origin": issuer, "Sec-Fetch-Site": "same-origin"}
                url = urljoin(url, form["action"])
            else:  # authgate's sign-in page
                self.pages.append("sign-in")
                links = dict(page.links)
                assert "Create an account with Google" in links, body[:800]
                url = urljoin(url, links["Create an account with Google"])
        raise AssertionError(f"too many steps before {until}: {self.pages}")


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    opened = Browser()
    try:
        yield opened
    finally:
        await opened.close()


def assert_code_flow_with_pkce(url: str, issuer: str, client_id: str) -> dict[str, str]:
    """The authorization request a program built: authgate's endpoint, the code flow with
    PKCE S256, state, nonce, and the scopes that give name and email."""
    assert url.startswith(f"{issuer}/oauth2/authorize?"), url
    sent = dict(parse_qsl(urlsplit(url).query))
    assert sent["client_id"] == client_id and sent["response_type"] == "code", sent
    assert sent["code_challenge_method"] == "S256" and len(sent["code_challenge"]) == 43, sent
    assert sent["state"] and sent["nonce"], sent
    assert set(sent["scope"].split()) == {"openid", "profile", "email"}, sent
    return sent


async def test_the_web_application_signs_ada_in(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    (tmp_path / "web_app.py").write_text(program("python", "web_app.py"))
    app_url = f"http://127.0.0.1:{served.env['WEB_APP_PORT']}"
    log = tmp_path / "web_app.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "web_app.py",
            cwd=tmp_path,
            env={**os.environ, **served.env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        assert await _answering(f"{app_url}/", process), log.read_text()
        status, _, home = await browser.go("GET", f"{app_url}/")
        assert status == 200 and 'href="/login"' in home, home
        status, location, _ = await browser.go("GET", f"{app_url}/login")
        assert status == 302, (status, log.read_text())
        assert_code_flow_with_pkce(location, served.issuer, "my-web-app")
        # as the page says, PKCE's plain method is refused, back at the redirect URI
        plain = location.replace("code_challenge_method=S256", "code_challenge_method=plain")
        status, refused, _ = await browser.go("GET", plain)
        assert status == 302 and refused.startswith(f"{app_url}/callback?"), (status, refused)
        assert dict(parse_qsl(urlsplit(refused).query))["error"] == "invalid_request", refused

        back = await browser.sign_in(
            location, issuer=served.issuer, user="ada", until=f"{app_url}/callback"
        )
        assert browser.pages == ["sign-in", "provider", "consent"], browser.pages
        status, location, body = await browser.go("GET", back)
        assert (status, location) == (307, "/"), (status, body, log.read_text()[-3000:])
        status, _, home = await browser.go("GET", f"{app_url}/")
        assert status == 200, home
        assert home == "Signed in as Ada Lovelace (ada@example.test)", home
        # authgate's session survived the application's cookie: single sign-on still works
        assert "session" in browser.cookies and "my_web_app_session" in browser.cookies
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), WITHIN)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


async def test_the_command_line_tool_signs_grace_in(
    served: Served, browser: Browser, tmp_path: Path, oidc_provider_installed: None
) -> None:
    (tmp_path / "sign-in.mjs").write_text(program("js", "sign-in.mjs"))
    # `npm install openid-client@6` beside it: scripts/interop-deps installed it here
    (tmp_path / "node_modules").symlink_to(RP_DIR / "node_modules")
    process = await asyncio.create_subprocess_exec(
        "node",
        "sign-in.mjs",
        cwd=tmp_path,
        env={**os.environ, "AUTHGATE_ISSUER": served.env["AUTHGATE_ISSUER"]},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        said = await asyncio.wait_for(process.stdout.readline(), WITHIN)
        assert said == b"Open this address in your browser:\n", said
        url = (await asyncio.wait_for(process.stdout.readline(), WITHIN)).decode().strip()
        sent = assert_code_flow_with_pkce(url, served.issuer, "my-cli")
        callback = sent["redirect_uri"]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", callback), callback

        back = await browser.sign_in(url, issuer=served.issuer, user="grace", until=callback)
        assert browser.pages == ["sign-in", "provider", "consent"], browser.pages
        status, _, body = await browser.go("GET", back)
        assert (status, body) == (200, "Signed in: you can close this window."), body

        out, err = await asyncio.wait_for(process.communicate(), WITHIN)
        assert process.returncode == 0, err.decode()[-3000:]
        printed = out.decode().strip()
        assert re.fullmatch(
            r"Signed in as Grace Hopper \(grace@example\.test\), subject [\w-]+", printed
        ), (printed, err.decode()[-3000:])
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
