"""The browser's part of the authorize step: follow the redirect or read the auto-post form."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlsplit

from tests.fakeidp.model import Callback


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.method: str = "get"
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form" and self.action is None:
            self.action = values.get("action", "")
            self.method = values.get("method", "get").lower()
        elif tag == "input" and "name" in values:
            self.fields[values["name"]] = values.get("value", "")


def callback_from_redirect(location: str) -> Callback:
    return Callback(
        method="GET",
        url=location,
        params=dict(parse_qsl(urlsplit(location).query, keep_blank_values=True)),
    )


def callback_from_form(html: str) -> Callback:
    parser = _FormParser()
    parser.feed(html)
    parser.close()
    if parser.action is None:
        raise AssertionError("the authorize answer has no form")
    return Callback(method=parser.method.upper(), url=parser.action, params=parser.fields)
