"""The README is a front door of at most 400 lines, and what it states that the code can check
stays true: its command list is the ``authgate`` command's, its ``/docs`` tag list is the
OpenAPI document's, the demo's folders in its layout exist, the passkey autofill it shows is the
demo's, and its map of the documentation names every page of docs/ and nothing that is
missing."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from authgate.entrypoints import cli
from authgate.entrypoints.app.build import document
from authgate.entrypoints.app.config import load

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _help(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    return out.getvalue()


def _choices(usage: str) -> list[str]:
    match = re.search(r"\{([a-z,-]+)\}", usage)
    assert match is not None, usage
    return match.group(1).split(",")


def _cli_commands() -> set[str]:
    """Every command ``authgate --help`` offers, a group's actions as ``group action``."""
    commands = set()
    for name in _choices(_help()):
        text = _help(name)
        if re.search(r"\{[a-z,-]+\}", text.split("\n\n", 1)[0]):
            commands |= {f"{name} {action}" for action in _choices(text)}
        else:
            commands.add(name)
    return commands


def _listed(block: str) -> set[str]:
    return {
        " ".join(w for w in m.split() if re.fullmatch(r"[a-z][a-z-]*", w))
        for m in re.findall(r"^authgate ((?:[a-z-]+ ?)+)", block, re.M)
    }


def test_the_readme_lists_every_command_and_no_other() -> None:
    block = _section(README, "Commands").split("```")[1]
    assert _listed(block) == _cli_commands()
    assert "provider-tokens rekey" in _cli_commands()


def test_the_operations_page_lists_every_command_and_no_other() -> None:
    page = (ROOT / "docs" / "operations.md").read_text()
    block = page.split("```", 2)[1]
    assert _listed(block) == _cli_commands()


def test_the_docs_tag_list_is_the_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    # config.example.yaml turns every provider event receiver on, so every tag is in use
    for name in re.findall(r"\$\{([A-Z0-9_]+)\}", (ROOT / "config.example.yaml").read_text()):
        monkeypatch.setenv(name, "A" * 43)
    tags = [t["name"] for t in document(load(str(ROOT / "config.example.yaml")))["tags"]]
    sentence = " ".join(README.split("operations grouped by tag (", 1)[1].split(")", 1)[0].split())
    listed = re.findall(r"`([a-z-]+)`", sentence.split(";", 1)[0])
    assert listed == tags


def test_the_layout_names_the_entrypoints_folders() -> None:
    layout = _section(README, "Layout")
    folders = sorted(
        p.name
        for p in (ROOT / "src" / "entrypoints").iterdir()
        if p.is_dir() and not p.name.startswith("__")
    )
    for folder in folders:
        assert re.search(rf"(entrypoints/{folder}/|\b{folder}/ \()", layout), folder


def test_the_autofill_the_readme_shows_is_the_demos() -> None:
    static = ROOT / "src" / "entrypoints" / "demo" / "static"
    assert re.search(r'autocomplete="[^"]*\bwebauthn\b', (static / "demo.html").read_text())
    assert 'mediation: "conditional"' in (static / "demo.js").read_text()
    assert "autofill" in _section(README, "A five-minute tour of the demo")
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        text = " ".join(page.read_text().split())
        assert "Not built: conditional mediation" not in text, page.name


def test_the_documentation_map_names_every_page() -> None:
    table = _section(README, "Documentation")
    linked = re.findall(r"\]\((docs/[^)#]+)\)", table)
    assert sorted(linked) == sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target


def test_the_readme_is_a_front_door_of_at_most_400_lines() -> None:
    assert len(README.splitlines()) <= 400
