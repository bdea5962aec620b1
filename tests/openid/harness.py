"""A relying party and a browser driving authgate's OpenID Provider over HTTP.

:class:`Op` plays both: the browser (the authgate session cookie, the sign-in page, the
fake identity provider's page, the consent page) and the application (authorization requests
with PKCE, the token endpoint with its client authentication, ID token checks as the OIDF
conformance suite makes them, § 5 of its OP test plans).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs
from aiohttp import ClientResponse
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.app.conftest import CALLBACK_URL, Client
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.support.jwt import header_of

ISSUER = "https://api.example.com"
SECRET = "web-secret-of-more-than-thirty-two-characters"
THIRD_SECRET = "third-secret-of-more-than-thirty-two-characters"
WEB_REDIRECT = "https://web.example.com/cb"
THIRD_REDIRECT = "https://third.example.com/cb"
CLIENTS: dict[str, Any] = {
    # first party: no consent page
    "web": {
        "name": "Web App",
        "type": "confidential",
        "secrets": [SECRET],
        "redirect_uris": [WEB_REDIRECT],
        "first_party": True,
    },
    # another party, authenticating with client_secret_post
    "third": {
        "name": "Third <Party> & Co",
        "type": "confidential",
        "token_endpoint_auth_method": "client_secret_post",
        "secrets": [THIRD_SECRET],
        "redirect_uris": [THIRD_REDIRECT],
    },
    # a native app: loopback on any port, no secret
    "native": {
        "name": "Native",
        "type": "public",
        "redirect_uris": ["http://127.0.0.1/callback"],
        "first_party": True,
        "allowed_scopes": ["openid", "profile", "offline_access"],
    },
}
SAME_ORIGIN = {"Origin": ISSUER, "Sec-Fetch-Site": "same-origin"}
ADA = FakeUser(sub="ada-1", email="ada@example.com", name="Ada Lovelace")


def local(url: str) -> str:
    """The path and query of one of the service's absolute URLs (the test client's)."""
    assert url.startswith(ISSUER + "/"), url
    return url[len(ISSUER) :]


def query_of(url: str) -> dict[str, str]:
    pairs = parse_qsl(urlsplit(url).query, keep_blank_values=True)
    out = dict(pairs)
    assert len(out) == len(pairs), f"a parameter repeats in {url}"
    return out


@attrs.define
class Pkce:
    verifier: str = attrs.field(factory=lambda: secrets.token_urlsafe(48))

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@attrs.define
class Request:
    """An authorization request as the application makes it."""

    client_id: str = "web"
    redirect_uri: str = WEB_REDIRECT
    scope: str = "openid"
    state: str | None = attrs.field(factory=lambda: secrets.token_urlsafe(96))  # 128 chars
    nonce: str | None = attrs.field(factory=lambda: secrets.token_urlsafe(16))
    pkce: Pkce = attrs.field(factory=Pkce)
    extra: dict[str, str] = attrs.field(factory=dict)

    def params(self) -> dict[str, str]:
        out = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": self.scope,
            "code_challenge": self.pkce.challenge,
            "code_challenge_method": "S256",
        }
        if self.state is not None:
            out["state"] = self.state
        if self.nonce is not None:
            out["nonce"] = self.nonce
        return {**out, **self.extra}


@attrs.frozen
class Answer:
    """The authorization response as the application receives it."""

    redirect_uri: str
    params: dict[str, str]

    @property
    def code(self) -> str:
        assert "code" in self.params, self.params
        return self.params["code"]


class _Forms(HTMLParser):
    """The forms and links of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs_: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs_}
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "fields": [], "buttons": []})
        elif tag == "input" and self.forms:
            self.forms[-1]["fields"].append((a["name"], a.get("value", "")))
        elif tag == "button" and self.forms and "name" in a:
            self.forms[-1]["buttons"].append((a["name"], a.get("value", "")))
        elif tag == "a":
            self._href, self._text = a.get("href", ""), ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._text.strip(), self._href))
            self._href = None


def parse_page(html: str) -> _Forms:
    parser = _Forms()
    parser.feed(html)
    return parser


@attrs.define
class Op:
    """authgate as an OpenID Provider, with the fake identity provider behind it."""

    client: Client
    idp: FakeIdP
    clock: SettableClock
    session: str | None = None  # the browser's authgate session cookie
    consent_key: str | None = None  # the browser's consent cookie

    # -- the browser ----------------------------------------------------------------------

    def cookies(self) -> dict[str, str]:
        jar = {}
        if self.session is not None:
            jar["session"] = self.session
        if self.consent_key is not None:
            jar["__Host-authgate_consent"] = self.consent_key
        return jar

    def cookie_header(self) -> dict[str, str]:
        jar = self.cookies()
        if not jar:
            return {}
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())}

    def keep_cookies(self, response: ClientResponse) -> None:
        if "session" in response.cookies:
            self.session = response.cookies["session"].value
        if "__Host-authgate_consent" in response.cookies:
            self.consent_key = response.cookies["__Host-authgate_consent"].value

    async def sign_in(self, user: FakeUser = ADA, provider: str = "google") -> str:
        """A plain sign-in at authgate (as the application's own pages start it): the
        browser's session."""
        start = await self.client.get(
            f"/v1/auth/{provider}",
            params={"redirect_uri": CALLBACK_URL.format(name=provider), "intent": "register"},
            headers={"Accept": "application/json"},
        )
        assert start.status == 200, await start.text()
        binding = start.cookies["__Host-authgate_binding"].value
        url = (await start.json())["authorizationUrl"]
        back = await self.idp.authorize(url, user=user)
        answer = await self._callback(provider, back.params, back.method, binding)
        assert answer.status == 302 and "error=" not in answer.headers["Location"]
        self.session = answer.cookies["session"].value
        return self.session

    async def _callback(
        self, provider: str, params: dict[str, str], method: str, binding: str
    ) -> ClientResponse:
        path = f"/v1/auth/{provider}/callback"
        headers = {"Cookie": f"__Host-authgate_binding={binding}"}
        if method == "POST":
            return await self.client.post(path, data=params, headers=headers, allow_redirects=False)
        return await self.client.get(path, params=params, headers=headers, allow_redirects=False)

    async def open(
        self, url: str, *, method: str = "GET", data: Any = None, headers: Mapping[str, str] = {}
    ) -> ClientResponse:
        """The browser opens one of the service's URLs (no redirect followed)."""
        sent = {"Accept": "text/html", **self.cookie_header(), **headers}
        target = local(url) if url.startswith("http") else url
        response = await self.client.request(
            method, target, data=data, headers=sent, allow_redirects=False
        )
        self.keep_cookies(response)
        return response

    async def authorize(
        self, request: Request, *, method: str = "GET", cookies: bool = True
    ) -> ClientResponse:
        """The application sends the browser to the authorization endpoint."""
        headers = {"Accept": "text/html", **(self.cookie_header() if cookies else {})}
        if method == "POST":
            response = await self.client.post(
                "/oauth2/authorize", data=request.params(), headers=headers, allow_redirects=False
            )
        else:
            response = await self.client.get(
                "/oauth2/authorize",
                params=request.params(),
                headers=headers,
                allow_redirects=False,
            )
        self.keep_cookies(response)
        return response

    async def sign_in_from_page(
        self,
        page: ClientResponse,
        *,
        user: FakeUser = ADA,
        provider: str = "Google",
        intent: str = "Sign in",
    ) -> ClientResponse:
        """On authgate's sign-in page, choose a provider, sign in there, and come back: the
        answer of the resumed authorization request."""
        assert page.status == 200, await page.text()
        links = dict(parse_page(await page.text()).links)
        return await self.through_provider(links[f"{intent} with {provider}"], user=user)

    async def through_provider(self, start_url: str, *, user: FakeUser = ADA) -> ClientResponse:
        """Follow a sign-in start (authgate → provider → callback → the resumed request)."""
        start = await self.open(start_url)
        assert start.status == 302, await start.text()
        binding = start.cookies["__Host-authgate_binding"].value
        back = await self.idp.authorize(start.headers["Location"], user=user)
        provider = urlsplit(start_url).path.split("/")[3]
        callback = await self._callback(provider, back.params, back.method, binding)
        assert callback.status == 302, await callback.text()
        assert "error=" not in callback.headers["Location"], callback.headers["Location"]
        self.keep_cookies(callback)
        return await self.open(callback.headers["Location"])

    async def consent(self, page: ClientResponse, decision: str = "approve") -> ClientResponse:
        """Answer the consent page as its buttons do."""
        assert page.status == 200, await page.text()
        form = parse_page(await page.text()).forms[0]
        data = [*form["fields"], ("decision", decision)]
        return await self.open(form["action"], method="POST", data=data, headers=SAME_ORIGIN)

    # -- the application ------------------------------------------------------------------

    @staticmethod
    async def answer(response: ClientResponse) -> Answer:
        """The authorization response the application receives (a redirect or a form)."""
        if response.status == 302:
            location = response.headers["Location"]
            return Answer(location.split("?", 1)[0], query_of(location))
        assert response.status == 200, await response.text()
        form = parse_page(await response.text()).forms[0]
        return Answer(form["action"], dict(form["fields"]))

    async def code(self, request: Request, **kwargs: Any) -> Answer:
        """A code for ``request`` from a browser that needs no page (signed in, consented)."""
        answer = await self.answer(await self.authorize(request, **kwargs))
        assert "code" in answer.params, answer.params
        return answer

    async def token(
        self,
        form: Mapping[str, str],
        *,
        client_id: str = "web",
        secret: str | None = SECRET,
        basic: bool = True,
        headers: Mapping[str, str] = {},
    ) -> ClientResponse:
        """POST /oauth2/token as the client authenticates."""
        sent = dict(headers)
        body = dict(form)
        if secret is not None and basic:
            raw = f"{client_id}:{secret}".encode()
            sent["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        elif secret is not None:
            body |= {"client_id": client_id, "client_secret": secret}
        else:
            body["client_id"] = client_id
        return await self.client.post("/oauth2/token", data=body, headers=sent)

    async def redeem(self, request: Request, answer: Answer, **kwargs: Any) -> ClientResponse:
        return await self.token(
            {
                "grant_type": "authorization_code",
                "code": answer.code,
                "redirect_uri": request.redirect_uri,
                "code_verifier": request.pkce.verifier,
            },
            **kwargs,
        )

    async def tokens(self, request: Request, answer: Answer, **kwargs: Any) -> dict[str, Any]:
        response = await self.redeem(request, answer, **kwargs)
        assert response.status == 200, await response.text()
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["Pragma"] == "no-cache"
        body = await response.json()
        assert isinstance(body, dict)
        return body

    async def keys(self) -> KeySet:
        response = await self.client.get("/.well-known/jwks.json")
        jwks = await response.json()
        kids = [k.get("kid") for k in jwks["keys"]]
        assert all(kids) and len(set(kids)) == len(kids)
        return KeySet.import_key_set(jwks)

    async def verify_id_token(
        self,
        token: str,
        *,
        client_id: str = "web",
        nonce: str | None = None,
        access_token: str | None = None,
        alg: str = "RS256",
    ) -> dict[str, Any]:
        """The OIDF suite's standard ID token checks (§ 5), against the published keys."""
        header = header_of(token)
        assert header["alg"] == alg and header.get("kid")
        decoded = jwt.decode(token, await self.keys(), algorithms=[alg])
        claims = dict(decoded.claims)
        now = self.clock.timestamp()
        assert claims["iss"] == ISSUER
        aud = claims["aud"]
        assert aud == client_id or (isinstance(aud, list) and client_id in aud)
        assert isinstance(claims["sub"], str) and claims["sub"]
        assert now - 300 < claims["exp"] < now + 50 * 365 * 86400
        assert now - 300 <= claims["iat"] <= now + 300
        if "auth_time" in claims:
            assert now - 365 * 86400 <= claims["auth_time"] <= now + 300
        if nonce is not None:
            assert claims["nonce"] == nonce
        else:
            assert "nonce" not in claims
        assert "acr" not in claims or (isinstance(claims["acr"], str) and claims["acr"])
        check_standard_claims(claims, now)
        # Scope claims come from userinfo in the code flow, not the ID token.
        assert not {"name", "email", "email_verified"} & set(claims)
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode()).digest()
            expected = base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()
            assert claims["at_hash"] == expected
        return claims

    async def userinfo(self, access_token: str) -> dict[str, Any]:
        """GET /oauth2/userinfo with the bearer token: the checks of the OIDF userinfo
        modules (200, JSON, standard claims of their types)."""
        response = await self.client.get(
            "/oauth2/userinfo", headers={"Authorization": f"Bearer {access_token}"}
        )
        return await userinfo_answer(response, self.clock.timestamp())


# OpenID Connect Core 1.0 section 5.1: the standard claims and the JSON type of each.
_STRING_CLAIMS = [
    "sub",
    "name",
    "given_name",
    "family_name",
    "middle_name",
    "nickname",
    "preferred_username",
    "profile",
    "picture",
    "website",
    "email",
    "gender",
    "birthdate",
    "zoneinfo",
    "locale",
    "phone_number",
]
_BOOLEAN_CLAIMS = ("email_verified", "phone_number_verified")


def check_standard_claims(claims: Mapping[str, Any], now: float) -> None:
    """The suite's type checks of the standard claims present (ID token and userinfo):
    strings, booleans, ``address`` an object, ``updated_at`` seconds (not milliseconds)
    not in the future."""
    for name in _STRING_CLAIMS:
        assert name not in claims or isinstance(claims[name], str), name
    for name in _BOOLEAN_CLAIMS:
        assert name not in claims or isinstance(claims[name], bool), name
    assert "address" not in claims or isinstance(claims["address"], dict)
    if "updated_at" in claims:
        updated = claims["updated_at"]
        assert isinstance(updated, int) and not isinstance(updated, bool)
        assert 0 <= updated <= now + 300


async def userinfo_answer(response: ClientResponse, now: float) -> dict[str, Any]:
    """A successful userinfo answer as the OIDF modules check it."""
    assert response.status == 200, await response.text()
    assert response.content_type == "application/json"
    body = await response.json()
    assert isinstance(body, dict)
    assert isinstance(body.get("sub"), str) and body["sub"]
    check_standard_claims(body, now)
    return body
