"""The end-session endpoint's pages: the confirmation asked before a sign-out another site started,
and the signed-out page.

``Referrer-Policy: same-origin``, not ``no-referrer``: under ``no-referrer`` a browser sends
``Origin: null`` with the confirmation's post, which the same-origin check must refuse."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

from aiohttp import web

from authgate.entrypoints.http.openid.pages import form_action_source, hidden_fields, html_page


def _page(title: str, body: str, *, status: int, form_targets: Iterable[str] = ()) -> web.Response:
    # form_targets: where a confirmed sign-out may be redirected.
    sources = ["'self'", *sorted({form_action_source(t) for t in form_targets})]
    return html_page(f"{title} · authgate", body, status=status, form_action=" ".join(sources))


def _notice(problem: str | None, *, done: bool = False) -> str:
    """A problem before the sign-out; after one (``done``), a neutral note."""
    if problem is None:
        return ""
    if done:
        return f'<p class="message neutral" role="status">{html.escape(problem)}</p>\n'
    return f'<p class="message problem" role="alert">{html.escape(problem)}</p>\n'


def confirmation_page(
    *,
    action: str,
    fields: Mapping[str, str],
    client_name: str | None,
    problem: str | None,
    redirect: str | None,
    status: int = 200,
) -> web.Response:
    """Asks the person to confirm the sign-out: a form that posts ``fields`` to ``action``.
    ``redirect``: where a confirmed sign-out goes (None: the signed-out page)."""
    who = (
        f"<p>{html.escape(client_name)} asks authgate to sign you out.</p>\n" if client_name else ""
    )
    hidden = hidden_fields(fields.items())
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
        f"{_notice(problem, done=True)}"
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
