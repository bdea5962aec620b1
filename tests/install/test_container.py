"""The container recipe: the image built from Containerfile (on a Debian base made with
debootstrap, no registry needed) migrates the test PostgreSQL as a one-shot, serves as a
non-root user, answers its readiness probe and signs a user in.

Needs podman (Debian's ``podman``, with ``runc`` where crun cannot run) able to start
containers; skipped with the reason otherwise. The base image is ``$AUTHGATE_TEST_CONTAINER_BASE``
when set, else ``localhost/authgate-base:bookworm``, made by deploy/container/make-base-image
when missing (root and debootstrap)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.support.ports import free_port
from tests.support.postgres import run_sync

from .support import Browser, run, wait_ready

ROOT = Path(__file__).resolve().parents[2]
BASE = os.environ.get("AUTHGATE_TEST_CONTAINER_BASE", "localhost/authgate-base:bookworm")
IMAGE = "localhost/authgate:test"
CONFIG = ROOT / "deploy" / "container" / "development.yaml"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

# Ways to start a container, tried in order: podman's defaults; runc instead of crun (crun
# refuses a cgroup v1 + v2 "hybrid" host); resource limits at or below the host's (podman's
# defaults exceed a hard limit the engine may not raise without CAP_SYS_RESOURCE).
_LIMITS = ["--ulimit", "nofile=16384:16384", "--ulimit", "nproc=8192:8192"]
_WAYS = [([], []), ([], _LIMITS), (["--runtime", "runc"], []), (["--runtime", "runc"], _LIMITS)]


class Engine:
    """podman with the global and per-container options that work on this machine."""

    def __init__(self, podman: str, global_options: list[str], limits: list[str]) -> None:
        self.podman = [podman, *global_options]
        self.limits = limits

    def __call__(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return run(*self.podman, *args, timeout=timeout)

    def try_(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.podman, *args], capture_output=True, text=True, timeout=timeout, check=False
        )


def _base_image(podman: str) -> None:
    if subprocess.run([podman, "image", "exists", BASE], check=False).returncode == 0:
        return
    if BASE != "localhost/authgate-base:bookworm":
        pytest.skip(f"the base image {BASE} ($AUTHGATE_TEST_CONTAINER_BASE) is not present")
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        pytest.skip(
            f"no base image {BASE}, and making one needs root and debootstrap "
            "(deploy/container/make-base-image)"
        )
    run(str(ROOT / "deploy" / "container" / "make-base-image"), BASE, timeout=1200)


@pytest.fixture(scope="module")
def engine() -> Engine:
    podman = shutil.which("podman")
    if podman is None:
        pytest.skip("podman is not installed (apt-get install podman runc debootstrap)")
    _base_image(podman)
    errors = []
    for global_options, limits in _WAYS:
        if "runc" in global_options and shutil.which("runc") is None:
            continue
        candidate = Engine(podman, global_options, limits)
        probe = candidate.try_("run", "--rm", *limits, "--network=host", BASE, "true")
        if probe.returncode == 0:
            return candidate
        errors.append(probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "?")
    pytest.skip(f"podman cannot start containers here: {'; '.join(errors)}")


@pytest.fixture(scope="module")
def image(engine: Engine) -> str:
    # The host's CA bundle over the image's during the build only: pip then trusts what this
    # machine trusts (a TLS-inspecting proxy's CA), and the image keeps Debian's own.
    ca = ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"] if CA_BUNDLE.exists() else []
    engine(
        "build",
        "--format=docker",  # keeps the HEALTHCHECK (OCI images have none)
        *engine.limits,
        "--network=host",
        *ca,
        "--build-arg",
        f"BASE={BASE}",
        "-t",
        IMAGE,
        "-f",
        str(ROOT / "Containerfile"),
        str(ROOT),
        timeout=1200,
    )
    return IMAGE


async def _accounts(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM accounts"))
    finally:
        await conn.close()


@pytest.fixture
def container_name(engine: Engine) -> Iterator[str]:
    name = f"authgate-test-{uuid.uuid4().hex[:8]}"
    yield name
    engine.try_("rm", "--force", "--time", "0", name)


def test_the_image_migrates_serves_as_non_root_and_signs_in(
    engine: Engine, image: str, empty_postgres_url: str, container_name: str
) -> None:
    port = free_port()
    # The container shares the host's network (no bridge is needed): the test PostgreSQL on
    # loopback is its database, and the development provider's issuer is the same address
    # for the service and for this test.
    options = [
        *engine.limits,
        "--network=host",
        "-e",
        f"DATABASE_URL={empty_postgres_url}",
        "-e",
        f"PORT={port}",
        "-v",
        f"{CONFIG}:/etc/authgate/authgate.yaml:ro",
    ]
    # compose.yaml's one-shot `migrate`.
    config = "/etc/authgate/authgate.yaml"
    migrated = engine("run", "--rm", *options, image, "migrate", "--config", config)
    names = sorted(p.stem for p in (ROOT / "migrations").glob("*.sql"))
    assert f"applied {len(names)} migration(s): {', '.join(names)}" in migrated.stdout

    engine("run", "--detach", "--name", container_name, *options, image)

    def gone() -> str | None:
        state = engine.try_("inspect", "--format", "{{.State.Running}}", container_name)
        if state.stdout.strip() == "true":
            return None
        return engine.try_("logs", container_name).stderr

    base = f"http://127.0.0.1:{port}"
    wait_ready(base, gone)
    account = Browser(base).sign_in("ada", app_url=f"http://127.0.0.1:{port}/demo")
    assert account["email"] == "ada@example.test"
    assert run_sync(_accounts(empty_postgres_url)) == 1

    # Not root, and the image's own probes answer.
    assert engine("exec", container_name, "id", "-u").stdout.strip() == "10001"
    for probe in ("liveness", "readiness"):
        engine(
            "exec",
            container_name,
            "/opt/authgate/bin/python",
            "/usr/local/lib/authgate/probe.py",
            probe,
        )
    # The image's HEALTHCHECK (kept by the docker format), run by the engine itself.
    engine("healthcheck", "run", container_name)

    # SIGTERM: a graceful stop, exit 0.
    engine("stop", "--time", "40", container_name, timeout=60)
    code = engine("inspect", "--format", "{{.State.ExitCode}}", container_name).stdout.strip()
    assert code == "0", engine.try_("logs", container_name).stderr
