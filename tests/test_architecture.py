"""The dependency rule, and the package list of pyproject.toml.

domain <- ports <- services <- entrypoints; adapters implement ports (they know the domain and
the ports, never services or entrypoints); only the composition root (and the development
provider it mounts) knows the adapters; the generic REST layer knows nothing of sign-in.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _module_imports(path: Path) -> set[str]:
    """Absolute ``authgate.*`` modules a file imports (relative imports resolved)."""
    return {m for m in _imports(path) if m == "authgate" or m.startswith("authgate.")}


def _imports(path: Path) -> set[str]:
    """Every absolute module a file imports, ours and others' (relative imports resolved)."""
    rel = path.relative_to(SRC).with_suffix("")
    package = ["authgate", *rel.parts[:-1]]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
    return found


def _files(folder: str) -> list[Path]:
    return sorted((SRC / folder).rglob("*.py"))


def _violations(folder: str, allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _files(folder):
        for module in _module_imports(path):
            if not any(module == a or module.startswith(a + ".") for a in allowed):
                bad.append(f"{path.relative_to(ROOT)} imports {module}")
    return bad


def test_domain_imports_nothing_else_of_ours() -> None:
    assert _files("domain")
    assert _violations("domain", ("authgate.domain",)) == []


def test_ports_import_only_domain() -> None:
    assert _files("ports")
    assert _violations("ports", ("authgate.domain", "authgate.ports")) == []


def test_services_import_only_domain_ports_and_services() -> None:
    assert _files("services")
    allowed = ("authgate.domain", "authgate.ports", "authgate.services")
    assert _violations("services", allowed) == []


def test_services_use_no_webauthn_library() -> None:
    # The WebAuthn ceremonies are a port's (ports/webauthn.py), on fido2 in adapters/webauthn/:
    # a service names no library, as the signed tokens' services name no JOSE library.
    def fido2_imports(folder: str) -> list[str]:
        return [
            f"{path.relative_to(ROOT)} imports {module}"
            for path in _files(folder)
            for module in sorted(_imports(path))
            if module == "fido2" or module.startswith("fido2.")
        ]

    assert fido2_imports("adapters/webauthn")  # the scan sees the library where it is
    assert fido2_imports("services") == []


def test_rest_layer_knows_nothing_of_sign_in() -> None:
    assert _files("entrypoints/rest")
    assert _violations("entrypoints/rest", ("authgate.entrypoints.rest",)) == []


# The REST layer's modules, lowest first: each imports only modules of the layers before its
# own, so a request is traced downwards (serving → api → operation → security/params → errors)
# and a concern (errors and routes, health, the document) is one module.
REST_LAYERS: tuple[tuple[str, ...], ...] = (
    ("logtext", "wire", "tracing", "eventloop"),
    ("errors", "schema", "accesslog"),
    ("params", "security", "health", "cors"),
    ("call",),
    ("operation",),
    ("openapi",),
    ("api",),
    ("serving",),
)


def test_rest_modules_import_only_lower_layers() -> None:
    rank = {m: i for i, layer in enumerate(REST_LAYERS) for m in layer}
    modules = {p.stem for p in _files("entrypoints/rest")} - {"__init__"}
    assert modules == set(rank), "a new rest module needs a place in REST_LAYERS"
    prefix = "authgate.entrypoints.rest."
    bad = []
    for path in _files("entrypoints/rest"):
        if path.stem == "__init__":
            continue
        for module in _module_imports(path):
            if module.startswith(prefix):
                imported = module.removeprefix(prefix).split(".")[0]
                if rank[imported] >= rank[path.stem]:
                    bad.append(f"{path.stem} imports {imported}")
    assert bad == []


def test_adapters_do_not_import_entrypoints() -> None:
    assert _violations("adapters", ("authgate.domain", "authgate.ports", "authgate.adapters")) == []


def test_only_entrypoints_use_the_services() -> None:
    users = {
        str(path.relative_to(ROOT))
        for path in SRC.rglob("*.py")
        if any(m.startswith("authgate.services") for m in _module_imports(path))
    }
    assert users
    assert all(u.startswith(("src/entrypoints/", "src/services/")) for u in users), users


def test_only_the_composition_root_and_cli_know_the_adapters() -> None:
    bad = [
        v
        for v in _violations(
            "entrypoints",
            ("authgate.domain", "authgate.ports", "authgate.services", "authgate.entrypoints"),
        )
        # The package itself holds only the release string (``authgate.__version__``).
        if not v.endswith(" imports authgate")
        and not v.startswith(
            (
                "src/entrypoints/app/",
                "src/entrypoints/devidp",
                # the operator's commands act on the key file and the providers themselves
                "src/entrypoints/operator.py",
            )
        )
    ]
    assert bad == []


def _module_names() -> dict[str, Path]:
    """Every module of ours by its dotted name (a package by its own)."""
    names = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(["authgate", *parts])] = path
    return names


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (module -> the modules it imports), or []."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            found = visit(imported, [*path, module])
            if found:
                return found
        done.add(module)
        return []

    for module in sorted(graph):
        found = visit(module, [])
        if found:
            return found
    return []


def test_no_import_cycles() -> None:
    # Imports inside functions count too: a module that must import another lazily to avoid a
    # cycle is a dependency running both ways. A package's own modules may import it.
    names = _module_names()
    graph = {}
    for module, path in names.items():
        imported = set(_module_imports(path))
        package = module.split(".") if path.stem == "__init__" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):  # `from package import module` too
                base = package[: len(package) - node.level + 1] if node.level else []
                source = ".".join([*base, node.module] if node.module else base)
                imported.update(f"{source}.{a.name}" for a in node.names)
        graph[module] = {
            m for m in imported if m in names and m != module and not module.startswith(m + ".")
        }
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]  # it sees one
    assert _cycle(graph) == []


def test_the_client_package_stands_alone() -> None:
    # authgate.client runs in other services: it may import itself only (and, outside
    # authgate, aiohttp and joserfc; FastAPI only inside require_session).
    assert _files("client")
    assert _violations("client", ("authgate.client",)) == []


@pytest.mark.parametrize("probe", ["authgate.services.signin", "authgate.adapters.memory"])
def test_detector_sees_imports(probe: str) -> None:
    # The checks above would pass vacuously if the import scan found nothing.
    path = SRC / Path(*probe.split(".")[1:]).with_suffix(".py")
    if not path.exists():
        path = SRC / Path(*probe.split(".")[1:]) / "__init__.py"
    assert _module_imports(path)


def test_pyproject_lists_every_package() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    present = {
        ".".join(["authgate", *p.parent.relative_to(SRC).parts]) for p in SRC.rglob("__init__.py")
    }
    # And the data folders mapped in from outside src/ (the migrations).
    assert set(setuptools["packages"]) == present | set(setuptools["package-dir"])


# Each HTTP face imports only its own services (and the session every face stands on), the
# shared http/common, the generic REST layer, and the domain and ports it renders: what two
# faces share lives in http/common, never in one face's handlers.
HTTP_FACES: dict[str, tuple[str, ...]] = {
    "signin": ("authgate.services.signin", "authgate.services.account"),
    "account": ("authgate.services.account", "authgate.services.signin"),
    "passkeys": ("authgate.services.passkeys",),
    "provider_events": ("authgate.services.provider_events",),
    "openid": ("authgate.services.openid", "authgate.entrypoints.http.openid"),
    "common": (),
}
HTTP_GROUND = (
    "authgate.domain",
    "authgate.ports",
    "authgate.entrypoints.rest",
    "authgate.entrypoints.http.common",
    "authgate.services.sessions",
)


def test_each_http_face_imports_only_its_services_common_and_rest() -> None:
    faces = {
        p.relative_to(SRC / "entrypoints/http").parts[0].removesuffix(".py")
        for p in _files("entrypoints/http")
    } - {"__init__"}
    assert faces == set(HTTP_FACES), "a new HTTP face needs its services named in HTTP_FACES"
    bad = []
    for face, own in HTTP_FACES.items():
        folder = f"entrypoints/http/{face}"
        paths = _files(folder) if (SRC / folder).is_dir() else [SRC / f"{folder}.py"]
        for path in paths:
            for module in _module_imports(path):
                if not any(module == a or module.startswith(a + ".") for a in HTTP_GROUND + own):
                    bad.append(f"{path.relative_to(ROOT)} imports {module}")
    assert bad == []


DATABASE_DRIVERS = ("asyncpg", "aiosqlite", "sqlite3", "psycopg", "psycopg2")


def test_the_sql_written_once_imports_no_driver() -> None:
    assert _files("adapters/sql")
    drivers = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _files("adapters/sql")
        for module in sorted(_imports(path))
        if module.split(".")[0] in DATABASE_DRIVERS
    ]
    assert drivers == []
    assert any(  # the scan sees a driver where one is
        m.split(".")[0] == "asyncpg" for p in _files("adapters/postgres") for m in _imports(p)
    )


def test_adapter_packages_share_only_sql_and_jose() -> None:
    # An adapter package is one technology's implementation of ports; two may share only the
    # SQL written once, the service's keys and signatures, and the top-level helper modules of
    # adapters/ (files, clock, the repositories a unit hands out).
    packages = {p.name for p in (SRC / "adapters").iterdir() if (p / "__init__.py").exists()}
    shared = {"sql", "jose"} | {p.stem for p in (SRC / "adapters").glob("*.py")}
    bad = []
    for package in sorted(packages):
        for path in _files(f"adapters/{package}"):
            for module in _module_imports(path):
                parts = module.split(".")
                foreign = parts[:2] == ["authgate", "adapters"] and len(parts) > 2
                if foreign and parts[2] not in shared | {package}:
                    bad.append(f"{path.relative_to(ROOT)} imports {module}")
    assert packages >= {"sql", "postgres", "sqlite", "memory", "jose", "provider"}
    assert bad == []


def test_only_the_composition_root_reads_the_configuration() -> None:
    # The configuration is read once, into the settings the adapters and services take; the
    # commands (cli, operator) are the only other readers. An HTTP face, a service, an adapter
    # or a development surface the root mounts (devidp, demo: it hands them plain values) never is.
    config = "authgate.entrypoints.app.config"
    readers = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if any(m == config or m.startswith(config + ".") for m in _module_imports(path))
    }
    assert readers
    outside = {r for r in readers if not r.startswith("entrypoints/app/")}
    assert outside <= {"entrypoints/cli.py", "entrypoints/operator.py"}, outside
