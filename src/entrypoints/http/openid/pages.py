"""The OpenID Provider's pages (sign-in, consent, ``form_post``, errors) and the skeleton, style
and headers they share with the end-session pages.

Nothing external: the inline style and scripts are allowed by their hashes (no
``unsafe-inline``); every value is escaped. No page may be framed (a framed consent button could
be clicked unknowingly), cached (it carries a request's state and a form's token) or leak its
address to another site."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from html import escape
from urllib.parse import urlsplit

import attrs
from aiohttp import web

from authgate.domain.openid.clients import Client
from authgate.domain.redirects import origin
from authgate.entrypoints.http.common.caller import ClientAddress
from authgate.entrypoints.http.common.look import LOOK
from authgate.ports.ratelimit import RateLimiter

# The look every page shares, then the provider's own.
STYLE = (
    LOOK
    + """\
main { max-width: 32rem; }
ul { list-style: none; padding: 0; margin: 0; }
li + li { margin-top: .5rem; }
.choices .button, .choices button, main > button { display: block; box-sizing: border-box;
  width: 100%; text-align: center; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
.actions button { flex: 1; }
.field label { display: block; margin-bottom: .25rem; }
.field input { width: 100%; }
.host { font-weight: 600; overflow-wrap: anywhere; }
.described { border-left: 3px solid currentColor; padding-left: .75rem; }
"""
)

# Every page's header: the service's name, as the demo's pages show theirs.
HEADER = '<header><p class="brand">authgate</p></header>'

# Submits the form_post answer at once; without scripts its button does.
FORM_POST_SCRIPT = 'document.getElementById("answer").submit();'

# The sign-in page's passkeys: the button asks with the browser's dialog; the field asks once
# focused, without one (conditional mediation), and that request is aborted, and awaited, before
# the button's own (a browser runs one at a time).
PASSKEY_SCRIPT = """(() => {
  const button = document.getElementById("passkey");
  const field = document.getElementById("passkey-field");
  const problem = document.getElementById("passkey-problem");
  if (!window.PublicKeyCredential) {
    button.hidden = true;
    field.parentElement.hidden = true;
    return;
  }
  const bytes = (t) => Uint8Array.from(atob(t.replace(/-/g, "+").replace(/_/g, "/")
    + "===".slice((t.length + 3) % 4)), (c) => c.charCodeAt(0)).buffer;
  const text = (b) => btoa(String.fromCharCode(...new Uint8Array(b)))
    .replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  const post = (path, body) => fetch(button.dataset.api + path, {
    method: "POST", credentials: "same-origin",
    headers: { Accept: "application/json", "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const passkey = async (more) => {
    const asked = await post("/v1/passkeys/authentication/options");
    const options = await asked.json();
    if (!asked.ok) throw new Error(options.message || options.error);
    return navigator.credentials.get({ ...more, publicKey:
      { ...options, challenge: bytes(options.challenge), allowCredentials: [] } });
  };
  const signIn = async (credential) => {
    const r = credential.response;
    const answer = await post("/v1/passkeys/authentication", {
      id: credential.id, rawId: text(credential.rawId), type: credential.type,
      response: { clientDataJSON: text(r.clientDataJSON),
        authenticatorData: text(r.authenticatorData), signature: text(r.signature),
        userHandle: r.userHandle ? text(r.userHandle) : undefined },
      clientExtensionResults: credential.getClientExtensionResults(),
      returnTo: button.dataset.returnTo,
    });
    const done = await answer.json();
    if (!answer.ok) throw new Error(done.message || done.error);
    location.assign(done.redirectTo);
  };
  const failed = (e) => {
    problem.textContent = `The passkey did not sign you in: ${e.message || e.name}`;
    problem.hidden = false;
  };
  let autofill = null;
  field.addEventListener("focus", async () => {
    const conditional = PublicKeyCredential.isConditionalMediationAvailable;
    if (autofill || !conditional || !(await conditional.call(PublicKeyCredential))) return;
    if (autofill) return;
    const asking = new AbortController();
    let finished;
    autofill = { asking, done: new Promise((resolve) => (finished = resolve)) };
    try {
      let credential;
      try {
        credential = await passkey({ mediation: "conditional", signal: asking.signal });
      } catch {
        return;
      }
      problem.hidden = true;
      await signIn(credential);
    } catch (e) {
      failed(e);
    } finally {
      autofill = null;
      finished();
    }
  });
  button.addEventListener("click", async () => {
    problem.hidden = true;
    if (autofill) {
      const running = autofill;
      running.asking.abort();
      await running.done;
    }
    try {
      await signIn(await passkey({}));
    } catch (e) {
      failed(e);
    }
  });
})();
"""

SCOPE_WORDS = {
    "openid": "Know who you are (your account identifier)",
    "profile": "See your name",
    "email": "See your email address and whether it is verified",
    "offline_access": "Stay connected while you are away (refresh its access without asking you)",
}


def scope_words(scope: str) -> str:
    """What a scope lets the application do, in words: OpenID Connect's own, and an API's by
    its name (what it means is the API's to say)."""
    return SCOPE_WORDS.get(scope, f"Use the permission \u201c{scope}\u201d")


def _hash_source(text: str) -> str:
    digest = hashlib.sha256(text.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


_STYLE_SOURCE = _hash_source(STYLE)
_SCRIPT_SOURCE = _hash_source(FORM_POST_SCRIPT)
_PASSKEY_SCRIPT_SOURCE = _hash_source(PASSKEY_SCRIPT)


def provider_label(name: str) -> str:
    """How a configured provider is named on a page."""
    return name.replace("_", " ").replace("-", " ").title()


def html_page(
    title: str,
    body: str,
    *,
    status: int = 200,
    form_action: str = "'self'",
    referrer: str = "same-origin",
    script: bool = False,
    passkey: bool = False,
) -> web.Response:
    """A page of the provider with ``body`` (already escaped) and the headers of every page: its
    policy (``form_action``: where its forms may post, and where a redirect after such a post
    may lead) and how much of its address it passes on. ``script``: with the form_post script;
    ``passkey``: with the sign-in page's passkey script, which may call the service itself."""
    tail = f"<script>{FORM_POST_SCRIPT}</script>" if script else ""
    if passkey:
        tail += f"<script>{PASSKEY_SCRIPT}</script>"
    html = (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="{referrer}">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{HEADER}<main>{body}</main>{tail}</body></html>\n"
    )
    csp = (
        f"default-src 'none'; style-src {_STYLE_SOURCE}; "
        + (f"script-src {_SCRIPT_SOURCE}; " if script else "")
        + (f"script-src {_PASSKEY_SCRIPT_SOURCE}; connect-src 'self'; " if passkey else "")
        + f"form-action {form_action}; base-uri 'none'; frame-ancestors 'none'"
    )
    headers = {
        "Content-Security-Policy": csp,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": referrer,
        "Cache-Control": "no-store",
        "Pragma": "no-cache",
    }
    return web.Response(
        status=status, text=html, content_type="text/html", charset="utf-8", headers=headers
    )


def hidden_fields(fields: Iterable[tuple[str, str]]) -> str:
    """A form's hidden inputs, every name and value escaped."""
    return "".join(
        f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">'
        for name, value in fields
    )


@attrs.frozen
class ProviderChoice:
    """A provider on the sign-in page: where signing in and signing up with it start."""

    name: str
    sign_in_url: str
    register_url: str


@attrs.frozen
class PasskeyChoice:
    """The sign-in page's passkey button: the service's base (``api``) and the address the
    browser goes on to once signed in (the authorization request, resumed)."""

    api: str
    return_to: str


def document_host(client: Client) -> str | None:
    """The host (and port, when the URL names one) serving the metadata document that
    describes ``client``; None for a client registered otherwise."""
    if client.origin != "metadata_document":
        return None
    return urlsplit(client.client_id).netloc.lower() or None


def shown_name(client: Client) -> str:
    """The client's name as the pages show it: a name from a metadata document is only what
    that document says, so the host serving it goes beside it."""
    host = document_host(client)
    return client.name if host is None else f"{client.name} ({host})"


def sign_in_page(
    client_name: str,
    choices: Sequence[ProviderChoice],
    *,
    fresh: bool,
    passkey: PasskeyChoice | None = None,
) -> web.Response:
    """The sign-in page of an authorization request: per provider, sign in or create an
    account; with passkeys on, a passkey too (a script: WebAuthn has no form)."""
    app = escape(client_name)
    if not choices and passkey is None:
        return error_page("No identity provider is configured to sign in with.", status=503)
    sign_in = "".join(
        f'<li><a class="button" href="{escape(c.sign_in_url)}">'
        f"Sign in with {escape(provider_label(c.name))}</a></li>"
        for c in choices
    )
    register = "".join(
        f'<li><a class="button secondary" href="{escape(c.register_url)}">'
        f"Create an account with {escape(provider_label(c.name))}</a></li>"
        for c in choices
    )
    why = (
        f'<p class="note">{app} asks you to sign in again.</p>'
        if fresh
        else f"<p>to continue to <strong>{app}</strong></p>"
    )
    with_passkey = (
        '<p class="note">Or with a passkey you added to your account:</p>'
        f'<button type="button" id="passkey" data-api="{escape(passkey.api)}" '
        f'data-return-to="{escape(passkey.return_to)}">Sign in with a passkey</button>'
        '<p class="field"><label for="passkey-field">Or choose it here</label> '
        '<input id="passkey-field" name="username" autocomplete="username webauthn" '
        'placeholder="Your passkeys are offered here"></p>'
        '<p id="passkey-problem" class="message problem" role="alert" hidden></p>'
        if passkey is not None
        else ""
    )
    body = (
        "<h1>Sign in</h1>"
        f"{why}"
        f'<nav class="choices" aria-label="Sign in with"><ul>{sign_in}</ul></nav>'
        f"{with_passkey}"
        "<h2>New here?</h2>"
        f'<nav class="choices" aria-label="Create an account with"><ul>{register}</ul></nav>'
    )
    return html_page("Sign in", body, passkey=passkey is not None)


def consent_page(
    client_name: str,
    scopes: Sequence[str],
    new_scopes: Sequence[str],
    *,
    action: str,
    fields: Iterable[tuple[str, str]],
    redirect_uri: str,
    described_by: str | None = None,
    resources: Sequence[str] = (),
) -> web.Response:
    """The consent page: what the client asks for, in words (and the services, RFC 8707
    ``resources``, its access would be for), and a form that approves or declines. Browsers
    hold the redirect after the post to ``form-action`` too, so the policy admits the
    client's ``redirect_uri``: else the browser never reaches the application.
    ``described_by``: the host whose metadata document names the client (its name is only
    what that document says), shown beside the name."""
    app = escape(client_name)
    if described_by is not None:
        app += f' <span class="host">({escape(described_by)})</span>'
    source = (
        ""
        if described_by is None
        else f'<p class="described">This application describes itself from '
        f"<strong>{escape(described_by)}</strong>; authgate has not checked who runs it. "
        "Allow it only if you trust that site.</p>"
    )
    # On a wider request than was consented to before, what is new is marked.
    widening = len(new_scopes) < len(scopes)
    items = "".join(
        f"<li>{escape(scope_words(s))}"
        + (' <span class="note">(new)</span>' if widening and s in new_scopes else "")
        + "</li>"
        for s in scopes
    )
    services = "".join(f"<li>{escape(r)}</li>" for r in resources)
    if services:
        services = f'<p>Its access would be for:</p><ul class="resources">{services}</ul>'

    body = (
        f"<h1>Allow {app} to use your account?</h1>"
        f"{source}"
        f'<p><strong>{app}</strong> would like to:</p><ul class="scopes">{items}</ul>{services}'
        f'<form method="post" action="{escape(action)}">{hidden_fields(fields)}'
        '<div class="actions">'
        '<button type="submit" name="decision" value="approve">Allow</button>'
        '<button class="secondary" type="submit" name="decision" value="deny">Deny</button>'
        "</div></form>"
        '<p class="note">You can withdraw this later from your account\'s applications.</p>'
    )
    form_action = f"'self' {form_action_source(redirect_uri)}"
    title = client_name if described_by is None else f"{client_name} ({described_by})"
    return html_page(f"Allow {title}?", body, form_action=form_action)


def form_post_page(redirect_uri: str, fields: Iterable[tuple[str, str]]) -> web.Response:
    """OAuth 2.0 Form Post Response Mode: the answer as a form the browser posts to the
    client's ``redirect_uri`` at once (a button does it without scripts)."""
    body = (
        "<h1>Returning to the application…</h1>"
        f'<form id="answer" method="post" action="{escape(redirect_uri)}">{hidden_fields(fields)}'
        '<noscript><button type="submit">Continue</button></noscript></form>'
    )
    form_action = form_action_source(redirect_uri)
    return html_page("Returning to the application", body, form_action=form_action, script=True)


def error_page(description: str, *, status: int = 400) -> web.Response:
    """The answer to a request that cannot go back to an application: no link onward."""
    body = (
        "<h1>This sign-in request cannot be completed</h1>"
        f"<p>{escape(description)}</p>"
        '<p class="note">Return to the application and try again; if it happens again, tell '
        "its developers.</p>"
    )
    return html_page("Sign-in request refused", body, status=status, form_action="'none'")


def any_address(address: ClientAddress | None) -> ClientAddress:
    """``address``, or without one the peer's address (no trusted proxy)."""
    return address if address is not None else ClientAddress(())


async def over_limit_page(
    limiter: RateLimiter | None, client_address: ClientAddress, request: web.Request
) -> web.StreamResponse | None:
    """Spends one of the client address's requests: None while some are left, else the 429
    page with ``Retry-After``: no form, no link, no address passed on (it may carry an ID
    token)."""
    if limiter is None:
        return None
    decision = await limiter.hit(client_address.limit_key(client_address.of(request)))
    if decision.allowed:
        return None
    seconds = decision.retry_after_seconds
    body = (
        "<h1>Too many requests</h1>"
        f"<p>Too many requests came from your network. Try again in {seconds} seconds.</p>"
    )
    page = html_page(
        "Too many requests", body, status=429, form_action="'none'", referrer="no-referrer"
    )
    page.headers["Retry-After"] = str(seconds)
    return page


def form_action_source(uri: str) -> str:
    """A CSP source that lets a form post (or a redirect after one) lead to ``uri``: its origin
    (an http(s) URI) or its scheme (a native app's private-use scheme); a registered URI has no
    space, quote or semicolon in either."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        return origin(uri)
    return f"{scheme}:"
