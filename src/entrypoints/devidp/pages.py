"""The HTML of the development identity provider: plain, accessible, no script but one file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape

from aiohttp import web

from authgate.entrypoints.devidp.clients import DevClient
from authgate.entrypoints.devidp.users import USERS, TestUser
from authgate.entrypoints.http.openid.pages import hidden_fields

BASE_PATH = "/dev/idp"
# No framing (the consent page must not be clickjacked), no referrer (the callback URL carries
# the code), scripts and styles from this origin only. No form-action: the form_post answer
# goes to the client's redirect URI, which may be another origin.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; "
    "img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

STYLE = """\
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; background: Canvas; color: CanvasText; }
main { max-width: 36rem; margin: 2rem auto; padding: 0 1rem; }
.badge { display: inline-block; padding: .2rem .6rem; border: 2px dashed #b35900;
  color: #8a4500; font-weight: 600; border-radius: .3rem; }
@media (prefers-color-scheme: dark) { .badge { color: #ffb366; border-color: #ffb366; } }
fieldset { border: 1px solid GrayText; border-radius: .4rem; padding: 1rem; }
ul { list-style: none; padding: 0; margin: 0; }
li + li { margin-top: .5rem; }
button { font: inherit; cursor: pointer; border-radius: .4rem; padding: .6rem 1rem; }
.user { width: 100%; text-align: left; border: 1px solid #1a4d8f; background: #e8f0fb;
  color: #0b2545; }
.user small { display: block; color: #33475b; }
.deny { margin-top: 1rem; border: 1px solid #8f1a1a; background: #fbe8e8; color: #5c0b0b; }
button:focus-visible { outline: 3px solid #f5a623; outline-offset: 2px; }
code { overflow-wrap: anywhere; }
h1 .why { display: block; font-size: 1rem; font-weight: 600; color: #8a4500; }
@media (prefers-color-scheme: dark) { h1 .why { color: #ffb366; } }
.reauth { border-left: 6px solid #b35900; padding: .25rem .75rem; }
"""

FORM_POST_SCRIPT = 'document.getElementById("form-post").submit();\n'


def _page(title: str, body: str, script: str | None = None, status: int = 200) -> web.Response:
    tail = f'<script src="{BASE_PATH}/{script}"></script>' if script else ""
    html = (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title>"
        f'<link rel="stylesheet" href="{BASE_PATH}/idp.css"></head>'
        f"<body><main>{body}</main>{tail}</body></html>\n"
    )
    return web.Response(status=status, text=html, content_type="text/html", headers=PAGE_HEADERS)


def authorization_page(
    *,
    client: DevClient,
    scopes: Iterable[str],
    redirect_uri: str,
    request_fields: Mapping[str, str],
    reauthentication: bool = False,
    users: Iterable[TestUser] = USERS,
) -> web.Response:
    """The consent page: one button per test user, and a button that denies.

    ``reauthentication``: the application asked the user to authenticate again (step-up before
    an account change), so the page says so instead of looking like a first sign-in."""
    choices = "".join(_user_choice(u) for u in users)
    scope_text = ", ".join(escape(s) for s in scopes) or "(none)"
    label = escape(client.label)
    if reauthentication:
        title, legend = "Confirm it's you", "Choose the test user you are signed in as"
        heading = (
            "<h1>Confirm it&#39;s you "
            '<span class="why">(re-authentication requested by the application)</span></h1>'
            f'<p class="reauth">The application asks you to sign in to {label} again before '
            "it lets you change your account. Choose the same user you are signed in as: "
            "another one is refused.</p>"
        )
    else:
        title, legend = "Sign in", "Choose a test user to sign in as"
        heading = f"<h1>Sign in with {label}</h1>"
    body = (
        '<p class="badge">Development identity provider — no real '
        f"{label} account is used</p>"
        + heading
        + f"<p>The application <code>{escape(client.client_id)}</code> asks for: {scope_text}. "
        f"After your choice you return to <code>{escape(redirect_uri)}</code>.</p>"
        f'<form method="post" action="{BASE_PATH}/authorize">'
        + hidden_fields(request_fields.items())
        + f"<fieldset><legend>{legend}</legend>"
        f"<ul>{choices}</ul></fieldset>"
        '<button class="deny" type="submit" name="deny" value="1">Deny access</button>'
        "</form>"
    )
    return _page(f"{title} with {client.label} (development)", body)


def _user_choice(user: TestUser) -> str:
    return (
        f'<li><button class="user" type="submit" name="user" value="{escape(user.key)}">'
        f"Continue as {escape(user.name)}<small>{escape(user.email)}"
        + (f" — {escape(user.note)}" if user.note else "")
        + "</small></button></li>"
    )


def form_post_page(redirect_uri: str, fields: Mapping[str, str]) -> web.Response:
    """``response_mode=form_post``: the answer goes back as a POSTed form (submitted by script,
    or by the button when scripts are off)."""
    body = (
        "<h1>Returning to the application…</h1>"
        f'<form id="form-post" method="post" action="{escape(redirect_uri)}">'
        + hidden_fields(fields.items())
        + '<button type="submit">Continue</button></form>'
    )
    return _page("Returning to the application", body, script="form-post.js")


def error_page(message: str) -> web.Response:
    """A request that cannot be answered by a redirect (unknown client or redirect URI)."""
    body = (
        '<p class="badge">Development identity provider</p>'
        "<h1>This sign-in request is invalid</h1>"
        f'<p role="alert">{escape(message)}</p>'
    )
    return _page("Invalid sign-in request (development)", body, status=400)
