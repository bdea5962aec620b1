"""The end-session endpoint's pages: the confirmation asked before a sign-out another site
started, and the signed-out page.

Plain HTML that loads nothing (one inline style block, allowed by its hash), readable without
it and by screen readers (a language, a title, a heading, a real form and button). Every value
shown or carried in a hidden field is escaped. The answers are never cached and never framed;
the policy allows the confirmation's form to post here only, and the redirect that may follow
it to go only where the request earned (a browser checks a form's redirect against
``form-action`` too).
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from aiohttp import web

from authgate.domain.redirects import origin

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:0;padding:2rem 1rem;line-height:1.5;"
    "color:#1a1a1a;background:#f6f6f6}"
    "main{max-width:28rem;margin:0 auto;padding:1.5rem;background:#fff;border-radius:.5rem;"
    "border:1px solid #ddd}"
    "h1{font-size:1.4rem;margin-top:0}"
    ".notice{padding:.75rem;border-left:4px solid #b45309;background:#fffbeb}"
    "button{font:inherit;padding:.6rem 1.2rem;border-radius:.4rem;border:1px solid #1d4ed8;"
    "background:#1d4ed8;color:#fff;cursor:pointer}"
    "button:focus-visible{outline:3px solid #93c5fd;outline-offset:2px}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode("ascii")

PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # The end-session URL carries the id_token_hint: no page of it may pass it on.
    "Referrer-Policy": "no-referrer",
}


def content_security_policy(form_targets: Iterable[str] = ()) -> str:
    """The pages' policy; ``form_targets``: the addresses a form post here may be redirected
    to (the client's post-logout redirect URI)."""
    sources = ["'self'", *sorted({_source_of(t) for t in form_targets})]
    return (
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; "
        f"form-action {' '.join(sources)}; frame-ancestors 'none'; base-uri 'none'"
    )


def _source_of(uri: str) -> str:
    """A CSP source that admits ``uri``: its origin for http(s), its scheme for a native
    app's private-use scheme (a source expression cannot hold a query)."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        return origin(uri)
    return f"{scheme}:"


def _page(title: str, body: str, *, status: int, form_targets: Iterable[str] = ()) -> web.Response:
    document = (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{html.escape(title)} · authgate</title>\n"
        f"<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n"
    )
    headers = {
        **PAGE_HEADERS,
        "Content-Security-Policy": content_security_policy(form_targets),
    }
    return web.Response(
        text=document, status=status, content_type="text/html", charset="utf-8", headers=headers
    )


def _notice(problem: str | None) -> str:
    if problem is None:
        return ""
    return f'<p class="notice" role="alert">{html.escape(problem)}</p>\n'


def confirmation_page(
    *,
    action: str,
    fields: Mapping[str, str],
    client_name: str | None,
    problem: str | None,
    redirect: str | None,
    status: int = 200,
) -> web.Response:
    """Asks the person to confirm the sign-out: a form that posts ``fields`` (the request's
    parameters and the confirmation token) to ``action``. ``redirect``: where a confirmed
    sign-out will send the browser (None: the signed-out page)."""
    who = (
        f"<p>{html.escape(client_name)} asks authgate to sign you out.</p>\n" if client_name else ""
    )
    hidden = "".join(
        f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">\n'
        for name, value in fields.items()
    )
    after = (
        "<p>You will then go back to the application.</p>\n"
        if redirect is not None
        else "<p>You will stay on authgate's signed-out page.</p>\n"
    )
    body = (
        "<h1>Sign out of authgate?</h1>\n"
        f"{who}{_notice(problem)}"
        "<p>This ends your authgate session in this browser. The applications you signed in "
        "to through it are told that you signed out.</p>\n"
        f"{after}"
        f'<form method="post" action="{html.escape(action)}">\n{hidden}'
        '<button type="submit">Sign out</button>\n</form>\n'
    )
    targets = [redirect] if redirect is not None else []
    return _page("Sign out?", body, status=status, form_targets=targets)


def signed_out_page(*, problem: str | None = None) -> web.Response:
    """The sign-out is done (or there was nothing to end in this browser)."""
    body = (
        "<h1>You are signed out</h1>\n"
        f"{_notice(problem)}"
        "<p>Your authgate session in this browser has ended. You can close this window.</p>\n"
    )
    return _page("Signed out", body, status=200)


def redirect_response(location: str, *, status: int) -> web.Response:
    """Back to the client: 302 after a GET, 303 after a form post (the browser then GETs)."""
    return web.Response(
        status=status,
        headers={
            "Location": location,
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        },
    )
