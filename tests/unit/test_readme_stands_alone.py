"""The README and docs/ stand alone in a clone: they point at nothing outside the repository,
and docs/api.md's endpoint table lists every operation the service documents in its OpenAPI
document (the configured providers' event receivers under their ``{name}``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from authgate.entrypoints.app.build import document
from authgate.entrypoints.app.config import load

ROOT = Path(__file__).resolve().parents[2]
API = (ROOT / "docs" / "api.md").read_text()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    assert "../shared" not in text
    assert "service-spec" not in text


def _table_rows() -> set[str]:
    table = API.split("## Endpoints", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Z]+ [^`]+)`", table, re.M))


@pytest.mark.parametrize("config", ["config.default.yaml", "config.example.yaml"])
def test_the_endpoint_table_lists_every_documented_operation(
    config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the production sample reads its secrets from the environment
    for name in re.findall(r"\$\{([A-Z0-9_]+)\}", (ROOT / config).read_text()):
        monkeypatch.setenv(name, "A" * 43)  # 32 bytes in base64url, where a key is asked
    paths = document(load(str(ROOT / config)))["paths"]
    documented = {
        f"{method.upper()} {re.sub(r'^/v1/providers/[^/]+/', '/v1/providers/{name}/', path)}"
        for path, operations in paths.items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert documented and documented - _table_rows() == set()


def test_the_table_says_that_redirect_uri_is_required() -> None:
    row = next(line for line in API.splitlines() if line.startswith("| `GET /v1/auth/{provider}` "))
    assert "`redirect_uri` (required" in row
