"""A small, real application that signs in through authgate's OpenID Provider, served on an
origin of its own (a thread of the test): what an application deployed apart from authgate
does, so that a browser test clicks through the provider's pages exactly as a person would.

It is a confidential client doing everything on its server side, as a web application does:

* ``/start`` sends the browser to ``/oauth2/authorize`` (code flow, PKCE S256, ``state``,
  ``nonce``; ``response_mode``, ``prompt`` and ``max_age`` as its own links ask);
* ``/callback`` takes the answer, from the query or posted (``form_post``), checks that the
  ``state`` is one it sent and not yet used, redeems the code at ``/oauth2/token``
  (``client_secret_basic`` and the PKCE verifier), verifies the ID token (the provider's key
  set, ``iss``, ``aud``, ``nonce``, ``exp``), asks ``/oauth2/userinfo``, and keeps the result
  under a cookie of its own; an ``error`` it shows as it came;
* ``/logout`` starts RP-initiated logout (``id_token_hint``, or only ``client_id`` when the
  application has lost its ID token), back to ``/signed-out``, which checks its ``state``.

Whatever goes wrong on its side is kept in :attr:`RelyingParty.problems` (and answered 500),
so that a test asserts the application itself saw nothing wrong.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from html import escape
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import attrs
from joserfc import jwt
from joserfc.jwk import KeySet

COOKIE = "shop_session"
# The application's own links: what each asks of the provider beside the plain sign-in.
SIGN_IN_LINKS: tuple[tuple[str, Mapping[str, str]], ...] = (
    ("Sign in", {}),
    ("Sign in, answer posted", {"response_mode": "form_post"}),
    ("Sign in again", {"prompt": "login"}),
    ("Sign in, within the last 10 minutes", {"max_age": "600"}),
    ("Sign in, within the last 2 seconds", {"max_age": "2"}),
)
PAGE_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    # No script, no style, framed by nobody: links and nothing else.
    "Content-Security-Policy": "default-src 'none'; form-action 'none'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


@attrs.frozen
class Pending:
    """A sign-in the application started: what it must find again in the answer."""

    nonce: str
    verifier: str


@attrs.frozen
class SignedIn:
    """What the application knows after a sign-in."""

    subject: str
    name: str
    auth_time: int | None
    id_token: str


class RelyingParty:
    """The application at ``http://{host}:{port}``, client ``client_id`` of ``issuer``."""

    def __init__(
        self, *, host: str, port: int, issuer: str, client_id: str, client_secret: str
    ) -> None:
        self.origin = f"http://{host}:{port}"
        self.issuer = issuer
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uri = f"{self.origin}/callback"
        self.post_logout_redirect_uri = f"{self.origin}/signed-out"
        self.pending: dict[str, Pending] = {}
        self.logouts: set[str] = set()
        self.sessions: dict[str, SignedIn] = {}
        self.problems: list[str] = []
        # How each answer came back: (the HTTP method, "code" or its error).
        self.answers: list[tuple[str, str]] = []
        self._metadata: dict[str, Any] | None = None
        self._lock = threading.Lock()
        app = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                app.answer(self, "GET")

            def do_POST(self) -> None:
                app.answer(self, "POST")

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- the provider ---------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            url = f"{self.issuer}/.well-known/openid-configuration"
            with urllib.request.urlopen(url, timeout=5) as answer:
                found: dict[str, Any] = json.load(answer)
            assert found["issuer"] == self.issuer, found["issuer"]
            self._metadata = found
        return self._metadata

    def _redeem(self, code: str, pending: Pending) -> dict[str, Any]:
        basic = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        body = urlencode(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "code_verifier": pending.verifier,
            }
        ).encode()
        request = urllib.request.Request(
            self.metadata()["token_endpoint"],
            data=body,
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                tokens: dict[str, Any] = json.load(answer)
        except urllib.error.HTTPError as e:
            raise AssertionError(f"the token endpoint answered {e.code}: {e.read()!r}") from None
        return tokens

    def _verified_claims(self, id_token: str, pending: Pending) -> dict[str, Any]:
        with urllib.request.urlopen(self.metadata()["jwks_uri"], timeout=5) as answer:
            keys = KeySet.import_key_set(json.load(answer))
        token = jwt.decode(id_token, keys, algorithms=["RS256", "ES256"])
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.client_id},
            nonce={"essential": True, "value": pending.nonce},
            sub={"essential": True},
            exp={"essential": True},
        ).validate(token.claims)
        return dict(token.claims)

    def _userinfo(self, access_token: str) -> dict[str, Any]:
        request = urllib.request.Request(
            self.metadata()["userinfo_endpoint"],
            headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            found: dict[str, Any] = json.load(answer)
        return found

    # -- the pages ------------------------------------------------------------------------

    def answer(self, http: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(http.path)
        query = dict(parse_qsl(parts.query))
        try:
            if method == "POST" and parts.path == "/callback":
                length = int(http.headers.get("Content-Length") or 0)
                self._callback(http, dict(parse_qsl(http.rfile.read(length).decode())))
            elif method == "POST":
                self._send(http, 405, "Not allowed", "<p>Not allowed.</p>")
            elif parts.path == "/":
                self._home(http)
            elif parts.path == "/start":
                self._start(http, query)
            elif parts.path == "/callback":
                self._callback(http, query)
            elif parts.path == "/logout":
                self._logout(http, with_hint=query.get("hint") != "none")
            elif parts.path == "/signed-out":
                self._signed_out(http, query)
            elif parts.path == "/favicon.ico":
                http.send_response(204)
                http.end_headers()
            else:
                self._send(http, 404, "Not found", "<p>Not found.</p>")
        except Exception as e:  # the test asserts that nothing went wrong here
            self.problems.append(f"{method} {parts.path}: {e!r}")
            self._send(http, 500, "Problem", f'<p id="problem">{escape(repr(e))}</p>')

    def _send(
        self,
        http: BaseHTTPRequestHandler,
        status: int,
        title: str,
        body: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        html = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)} · Example Shop</title></head><body>{body}</body></html>"
        ).encode()
        http.send_response(status)
        for name, value in {**PAGE_HEADERS, **(headers or {})}.items():
            http.send_header(name, value)
        http.send_header("Content-Length", str(len(html)))
        http.end_headers()
        http.wfile.write(html)

    def _redirect(
        self, http: BaseHTTPRequestHandler, location: str, *, cookie: str | None = None
    ) -> None:
        http.send_response(303)
        http.send_header("Location", location)
        http.send_header("Cache-Control", "no-store")
        if cookie is not None:
            http.send_header("Set-Cookie", cookie)
        http.end_headers()

    def _signed_in(self, http: BaseHTTPRequestHandler) -> SignedIn | None:
        jar = SimpleCookie(http.headers.get("Cookie") or "")
        morsel = jar.get(COOKIE)
        return self.sessions.get(morsel.value) if morsel is not None else None

    def _home(self, http: BaseHTTPRequestHandler) -> None:
        links = "".join(
            f'<li><a href="/start?{escape(urlencode(extra))}">{escape(label)}</a></li>'
            for label, extra in SIGN_IN_LINKS
        )
        who = self._signed_in(http)
        if who is None:
            body = f"<h1>Example Shop: not signed in</h1><ul>{links}</ul>"
            self._send(http, 200, "Not signed in", body)
            return
        body = (
            f"<h1>Signed in as {escape(who.subject)}</h1>"
            f'<p>Name: <span id="name">{escape(who.name)}</span></p>'
            f'<p>Signed in at the provider: <span id="auth-time">{who.auth_time}</span></p>'
            f"<ul>{links}"
            '<li><a href="/logout">Sign out</a></li>'
            '<li><a href="/logout?hint=none">Sign out of authgate, without the ID token</a></li>'
            "</ul>"
        )
        self._send(http, 200, "Signed in", body)

    def _start(self, http: BaseHTTPRequestHandler, query: Mapping[str, str]) -> None:
        state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .decode()
            .rstrip("=")
        )
        with self._lock:
            self.pending[state] = Pending(nonce, verifier)
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": "openid profile",
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        for name in ("response_mode", "prompt", "max_age"):
            if name in query:
                params[name] = query[name]
        location = f"{self.metadata()['authorization_endpoint']}?{urlencode(params)}"
        self._redirect(http, location)

    def _callback(self, http: BaseHTTPRequestHandler, answer: Mapping[str, str]) -> None:
        with self._lock:
            pending = self.pending.pop(answer.get("state", ""), None)
        if pending is None:
            raise AssertionError("an answer whose state this application never sent")
        # RFC 9207: the answer says which provider sent it.
        if answer.get("iss") != self.issuer:
            raise AssertionError(f"an answer from another issuer: {answer.get('iss')!r}")
        self.answers.append((http.command, answer.get("error", "code")))
        if "error" in answer:
            body = (
                "<h1>The sign-in did not happen</h1>"
                f'<p>The provider answered: <span id="error">{escape(answer["error"])}</span></p>'
                '<p><a href="/">Back to the shop</a></p>'
            )
            self._send(http, 200, "Not signed in", body)
            return
        tokens = self._redeem(answer["code"], pending)
        claims = self._verified_claims(tokens["id_token"], pending)
        info = self._userinfo(tokens["access_token"])
        if info.get("sub") != claims["sub"]:
            raise AssertionError("userinfo names another subject than the ID token")
        auth_time = claims.get("auth_time")
        signed_in = SignedIn(
            claims["sub"],
            str(info.get("name", "")),
            auth_time if isinstance(auth_time, int) else None,
            tokens["id_token"],
        )
        key = secrets.token_urlsafe(32)
        with self._lock:
            self.sessions[key] = signed_in
        cookie = f"{COOKIE}={key}; Path=/; HttpOnly; SameSite=Lax"
        self._redirect(http, "/", cookie=cookie)

    def _logout(self, http: BaseHTTPRequestHandler, *, with_hint: bool) -> None:
        who = self._signed_in(http)
        state = secrets.token_urlsafe(32)
        with self._lock:
            self.logouts.add(state)
        params = {"post_logout_redirect_uri": self.post_logout_redirect_uri, "state": state}
        if with_hint and who is not None:
            params["id_token_hint"] = who.id_token
        else:
            params["client_id"] = self.client_id
        location = f"{self.metadata()['end_session_endpoint']}?{urlencode(params)}"
        # The application's own sign-in ends here, whatever the provider then does.
        self._redirect(
            http, location, cookie=f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"
        )

    def _signed_out(self, http: BaseHTTPRequestHandler, query: Mapping[str, str]) -> None:
        with self._lock:
            known = query.get("state", "") in self.logouts
            self.logouts.discard(query.get("state", ""))
        if not known:
            raise AssertionError("back from a logout this application never started")
        body = '<h1>Signed out</h1><p><a href="/">Back to the shop</a></p>'
        self._send(http, 200, "Signed out", body)
