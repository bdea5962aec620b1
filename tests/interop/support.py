"""oidc-provider (tests/interop/oidc_provider/server.js) as a child process, and a browser that
signs in through its own development pages and ends the session there.

Nothing here knows authgate's internals: the browser speaks HTTP to both servers, keeps
oidc-provider's cookies in a jar, and carries authgate's (binding, session) by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import aiohttp
import attrs

from bench.harness import ServiceProcess

HERE = Path(__file__).resolve().parent
SERVER_DIR = HERE / "oidc_provider"
RP_DIR = HERE / "openid_client"  # openid-client, the relying party driving authgate's provider face
ROOT = HERE.parents[1]
INSTALL = ROOT / "scripts" / "interop-deps"
BINDING_COOKIE = "__Host-authgate_binding"
SUBMITS_ITSELF = "document.forms[0].submit()"  # oidc-provider's auto-submitted forms
PROVIDER = "oidcdemo"  # authgate's name for it: lower-case letters and digits
CLIENT_ID = "authgate-interop"
CLIENT_SECRET = "interop-client-secret"  # exists only in the test run's provider


MIN_NODE = 20  # oidc-provider 9 runs on Node.js 20 (it prefers 22)


def missing_tools() -> str | None:
    """Why oidc-provider cannot run here (no node or npm, or too old a node), or None."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (the interop tests run oidc-provider on Node.js)"
    version = subprocess.run(
        ["node", "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < MIN_NODE:
        return f"node {version or '?'} is older than {MIN_NODE} (oidc-provider 9 needs {MIN_NODE}+)"
    return None


def install() -> None:
    """``scripts/interop-deps``: oidc-provider and openid-client at the locked versions (quick
    when present)."""
    done = subprocess.run([str(INSTALL)], capture_output=True, text=True, timeout=300, check=False)
    installed = (
        SERVER_DIR / "node_modules" / "oidc-provider",
        RP_DIR / "node_modules" / "openid-client",
    )
    if done.returncode != 0 or not all(folder.is_dir() for folder in installed):
        raise RuntimeError(f"scripts/interop-deps failed:\n{done.stdout}{done.stderr}")


class OidcProviderFailed(Exception):
    """oidc-provider did not start or stopped; the text carries its output."""


class OidcProvider:
    """``node server.js`` on a loopback port; ``async with`` starts it and waits for its ready
    line. ``events`` holds the JSON lines it prints (grant.success, backchannel.success, ...)."""

    def __init__(
        self,
        *,
        port: int,
        authgate_url: str,
        provider_name: str,
        client_id: str,
        client_secret: str,
        log_path: Path,
    ) -> None:
        self.port = port
        self.issuer = f"http://127.0.0.1:{port}"
        self.client_id = client_id
        self._env = {
            **os.environ,
            "OP_PORT": str(port),
            "AUTHGATE_URL": authgate_url,
            "PROVIDER_NAME": provider_name,
            "CLIENT_ID": client_id,
            "CLIENT_SECRET": client_secret,
        }
        self.log_path = log_path
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> OidcProvider:
        return await self.start()

    async def start(self) -> OidcProvider:
        with self.log_path.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                "node",
                "server.js",
                cwd=SERVER_DIR,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self._reader = asyncio.create_task(self._read())
        try:
            await self.wait_for("ready", within=30)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        with self.log_path.open("a") as log:
            async for raw in self._process.stdout:
                line = raw.decode(errors="replace").strip()
                log.write(f"{line}\n")
                log.flush()
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if isinstance(event, dict):
                        self.events.append(event)
                self._changed.set()
        self._changed.set()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == name]

    async def wait_for(self, *names: str, count: int = 1, within: float = 10) -> dict[str, Any]:
        """The ``count``-th event called one of ``names``, waiting up to ``within`` seconds."""

        async def seen() -> dict[str, Any]:
            while True:
                found = [e for e in self.events if e.get("event") in names]
                if len(found) >= count:
                    return found[count - 1]
                if self._process is not None and self._process.returncode is not None:
                    raise OidcProviderFailed(f"oidc-provider exited:\n{self.log()[-3000:]}")
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(seen(), within)
        except TimeoutError:
            raise OidcProviderFailed(
                f"no {' or '.join(names)} event within {within} s:\n{self.log()[-3000:]}"
            ) from None


@attrs.frozen
class Answer:
    status: int
    url: str
    location: str | None
    text: str
    cookies: Mapping[str, str]


class Browser:
    """One user's browser: a cookie jar for oidc-provider, authgate's cookies by hand."""

    def __init__(self, authgate_url: str) -> None:
        self.authgate_url = authgate_url
        self.authgate_cookies: dict[str, str] = {}
        self.prompts: list[str] = []  # the provider's pages in the last through_provider
        self.http = aiohttp.ClientSession(
            cookie_jar=aiohttp.CookieJar(unsafe=True),
            timeout=aiohttp.ClientTimeout(total=30),
        )
        # authgate's cookies are Secure (and __Host-): sent by hand on plain-HTTP loopback
        self.plain = aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(), timeout=aiohttp.ClientTimeout(total=30)
        )

    async def close(self) -> None:
        await self.http.close()
        await self.plain.close()

    async def _read(self, response: aiohttp.ClientResponse) -> Answer:
        return Answer(
            status=response.status,
            url=str(response.url),
            location=response.headers.get("Location"),
            text=await response.text(),
            cookies={k: m.value for k, m in response.cookies.items()},
        )

    async def authgate(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        data: Sequence[tuple[str, str]] | None = None,
    ) -> Answer:
        """A request to authgate with the cookies it has set so far (kept up to date);
        ``data``: a form to post."""
        sent = dict(headers or {})
        if self.authgate_cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.authgate_cookies.items())
        async with self.plain.request(
            method,
            urljoin(self.authgate_url, path),
            params=params,
            headers=sent,
            data=data,
            allow_redirects=False,
        ) as response:
            answer = await self._read(response)
        for name, value in answer.cookies.items():
            if value:
                self.authgate_cookies[name] = value
            else:
                self.authgate_cookies.pop(name, None)
        return answer

    async def provider(
        self, method: str, url: str, *, data: Mapping[str, str] | None = None
    ) -> Answer:
        async with self.http.request(method, url, data=data, allow_redirects=False) as response:
            return await self._read(response)

    async def through_provider(
        self, url: str, *, stop_at: str, login: str, cancel: bool = False
    ) -> Answer:
        """Follows ``url`` at the provider as a person would: redirects, its login form
        (``login`` with any password), its consent form, until a redirect leaves for
        ``stop_at``; that last answer (its Location is the address at ``stop_at``).
        ``cancel``: "[ Cancel ]" on the first page instead. Pages that submit themselves
        (oidc-provider ends its session of another user so) are submitted. The pages shown,
        by their prompt (login, consent; "?" for the others), are in ``self.prompts``."""
        self.prompts = []
        answer = await self.provider("GET", url)
        for _ in range(20):
            if answer.location is not None:
                target = urljoin(answer.url, answer.location)
                if target.startswith(stop_at):
                    return attrs.evolve(answer, location=target)
                answer = await self.provider("GET", target)
                continue
            if answer.status != 200:
                raise AssertionError(f"the provider answered {answer.status}: {answer.text[:500]}")
            form = only_form(answer)
            fields = dict(form.fields)
            self.prompts.append(fields.get("prompt", "?"))
            if cancel:
                answer = await self.provider("GET", link(answer, "[ Cancel ]"))
            elif fields.get("prompt") == "login":
                fields.update(login=login, password="any password")
                answer = await self.provider("POST", form.action, data=fields)
            elif fields.get("prompt") == "consent" or SUBMITS_ITSELF in answer.text:
                answer = await self.provider("POST", form.action, data=fields)
            else:
                raise AssertionError(f"an unexpected page at the provider: {answer.text[:800]}")
        raise AssertionError("too many steps at the provider")

    async def sign_out_at_provider(self, end_session_endpoint: str, client_id: str) -> Answer:
        """RP-initiated logout: the provider's end-session page, and "Yes, sign me out" (the
        button submits the page's logout form with logout=yes); the provider's last answer."""
        page = await self.provider("GET", f"{end_session_endpoint}?client_id={client_id}")
        assert page.status == 200, page
        form = only_form(page)
        yes = button(page, "Yes, sign me out")
        data = {**dict(form.fields), yes["name"]: yes["value"]}
        return await self.provider("POST", form.action, data=data)


@attrs.frozen
class Form:
    action: str
    fields: tuple[tuple[str, str], ...]


FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S | re.I)
ATTR = re.compile(r'([a-zA-Z_:.-]+)\s*=\s*"([^"]*)"')
FIELD = re.compile(r"<(?:input|button)\b([^>]*)>", re.I)


def attributes(tag: str) -> dict[str, str]:
    return {k.lower(): html.unescape(v) for k, v in ATTR.findall(tag)}


def forms(answer: Answer) -> list[Form]:
    """The page's forms with their hidden and text fields (no buttons: the caller presses
    one by adding its name and value)."""
    found = []
    for head, body in FORM.findall(answer.text):
        fields = []
        for tag in FIELD.findall(body):
            a = attributes(tag)
            if "name" in a and a.get("type") != "submit":
                fields.append((a["name"], a.get("value", "")))
        action = urljoin(answer.url, attributes(head).get("action", ""))
        found.append(Form(action, tuple(fields)))
    return found


def only_form(answer: Answer) -> Form:
    found = forms(answer)
    if len(found) != 1:
        raise AssertionError(f"expected one form, found {len(found)}: {answer.text[:800]}")
    return found[0]


def button(answer: Answer, label: str) -> dict[str, str]:
    """The attributes of the submit button whose text is ``label``."""
    for tag, text in re.findall(r"<button\b([^>]*)>(.*?)</button>", answer.text, re.S | re.I):
        if html.unescape(text).strip() == label:
            return attributes(tag)
    raise AssertionError(f"no button {label!r} on the page: {answer.text[:800]}")


def link(answer: Answer, label: str) -> str:
    """The absolute address of the link whose text is ``label``."""
    for tag, text in re.findall(r"<a\b([^>]*)>(.*?)</a>", answer.text, re.S | re.I):
        if html.unescape(text).strip() == label and "href" in attributes(tag):
            return urljoin(answer.url, attributes(tag)["href"])
    raise AssertionError(f"no link {label!r} on the page: {answer.text[:800]}")


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


@attrs.frozen
class Interop:
    authgate: ServiceProcess
    provider: OidcProvider
    database_url: str

    @property
    def callback_url(self) -> str:
        return f"{self.authgate.url}/v1/auth/{PROVIDER}/callback"

    def browser(self) -> Browser:
        return Browser(self.authgate.url)
