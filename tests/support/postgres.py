"""A throwaway PostgreSQL for tests. A pytest plugin; enable it in ``tests/conftest.py`` with
``pytest_plugins = ["tests.support.postgres"]``.

Which server, chosen once per run by ``AUTHGATE_TEST_PG``:

- ``auto`` (default): the server at ``AUTHGATE_TEST_PG_URL`` (default
  ``postgresql://postgres@127.0.0.1:5432/postgres``, an administrative connection) when it
  answers, otherwise a throwaway cluster started from the installed binaries, otherwise the
  PostgreSQL tests are skipped (with the reason);
- ``external``: that server only (an error when it does not answer);
- ``cluster``: always a throwaway cluster (``initdb`` + ``pg_ctl`` on a free port under a temp
  dir, as the ``postgres`` user through ``runuser`` when running as root), removed at the end;
- ``off``: skip every PostgreSQL test.

Either way the run works in its own database (``authgate_test_<random>``), migrated once and
dropped at the end; nothing else on the server is touched.

Fixtures:

- ``postgres_server`` (session): the :class:`PostgresServer` (``.url(dbname)``,
  ``.admin_url``, ``.kind``, ``.controllable``);
- ``postgres_url`` (session): the run's migrated database, shared by every test;
- ``clean_postgres_url`` (function): ``postgres_url`` after emptying every table (for tests
  that count rows or read "everything");
- ``empty_postgres_url`` (function): a new database without any schema, dropped afterwards
  (migration tests);
- ``postgres_control`` (function): the throwaway cluster to stop and start for outage tests;
  skips the test when the server is not a throwaway cluster; restarts it afterwards;
- ``throwaway_cluster_factory`` (function): starts clusters of its own for a test (skips when
  the binaries cannot run), each removed afterwards;
- ``asyncpg_pool`` (function, two runs): False, then True: the PostgreSQL adapter tests pass it
  to ``open_postgres`` so that they run on our pool and on asyncpg's (the library's path kept
  beside ours: src/adapters/postgres/pool.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from authgate.adapters.postgres import migrate
from tests.support.ports import free_port

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
MODES = ("auto", "external", "cluster", "off")

T = TypeVar("T")


class ClusterUnavailable(Exception):
    """The PostgreSQL binaries are missing or cannot run here."""


def _bindir() -> Path:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if versions:
        return Path(versions[0]).parent
    raise ClusterUnavailable("no initdb on PATH nor under /usr/lib/postgresql/*/bin")


class ThrowawayCluster:
    """A PostgreSQL cluster in a temp dir on a free loopback port, trust auth, user postgres.

    ``initdb`` refuses to run as root: as root, every server command runs as the ``postgres``
    system user (``runuser -u postgres --``) and the temp dir is handed to that user.
    """

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.port = free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                raise ClusterUnavailable("running as root and runuser is missing")
            try:
                import pwd

                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise ClusterUnavailable("running as root and no 'postgres' user") from None
            self._as = [runuser, "-u", "postgres", "--"]
        self.root = Path(tempfile.mkdtemp(prefix="authgate-pg-"))
        if self._as:
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.running = False

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: float = 60) -> None:
        try:
            subprocess.run(
                [*self._as, *args], check=True, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.CalledProcessError as e:
            log = self.log.read_text() if self.log.exists() else ""
            raise ClusterUnavailable(
                f"{Path(args[0]).name} failed ({e.returncode}): {e.stderr.strip()} {log[-2000:]}"
            ) from None
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ClusterUnavailable(f"{Path(args[0]).name} failed: {e}") from None

    def init(self) -> None:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )

    def start(self) -> None:
        # Durability off: a test cluster trades it for speed.
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "30",
            "start",
        )
        self.running = True

    def stop(self, mode: Literal["smart", "fast", "immediate"] = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        self.running = False

    def destroy(self) -> None:
        if self.running:
            with contextlib.suppress(ClusterUnavailable):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    @classmethod
    def create(cls) -> ThrowawayCluster:
        cluster = cls()
        try:
            cluster.init()
            cluster.start()
        except BaseException:
            cluster.destroy()
            raise
        return cluster


class PostgresServer:
    """The server a test run uses: an existing one, or a throwaway cluster."""

    def __init__(self, admin_url: str, cluster: ThrowawayCluster | None = None) -> None:
        self.admin_url = admin_url
        self.cluster = cluster

    @property
    def kind(self) -> Literal["external", "cluster"]:
        return "cluster" if self.cluster is not None else "external"

    @property
    def controllable(self) -> bool:
        """Whether tests may stop and start it (only a throwaway cluster of this run)."""
        return self.cluster is not None

    def url(self, dbname: str) -> str:
        """The URL of database ``dbname`` on this server, as the admin user."""
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path="/" + dbname))

    def create_database(self) -> str:
        """Create a uniquely named empty database; returns its name."""
        name = f"authgate_test_{uuid.uuid4().hex[:12]}"
        _admin(self.admin_url, f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        _admin(self.admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, on a loop of its own: in this thread,
    or in a helper thread when this thread already runs a loop (a sync fixture requested by
    an async fixture through ``request.getfixturevalue``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _admin(url: str, *statements: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(url, timeout=10)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    run_sync(run())


def _reachable(url: str) -> str | None:
    """None when the server answers, else why not."""

    async def probe() -> None:
        conn = await asyncpg.connect(url, timeout=3)
        await conn.close()

    try:
        run_sync(probe())
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


async def empty_tables(url: str) -> None:
    """Delete every row of every table but the migration ledger (DELETE, not TRUNCATE: on
    the few rows a test leaves it is several times faster)."""
    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT quote_ident(tablename) AS t FROM pg_tables "
            "WHERE schemaname = 'public' AND tablename <> 'schema_migrations'"
        )
        if tables:  # the foreign keys cascade: any order will do
            await conn.execute(";".join(f"DELETE FROM {r['t']}" for r in tables))
    finally:
        await conn.close()


async def terminate_backends(url: str) -> int:
    """Kill every other connection to the database of ``url`` (simulates connection loss);
    returns once they are gone (their clients may not have noticed yet)."""
    conn = await asyncpg.connect(url)
    try:
        killed = await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(killed or 0)
    finally:
        await conn.close()


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    mode = os.environ.get("AUTHGATE_TEST_PG", "auto").strip().lower() or "auto"
    if mode not in MODES:
        pytest.fail(f"AUTHGATE_TEST_PG={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "off":
        pytest.skip("PostgreSQL tests disabled (AUTHGATE_TEST_PG=off)")
    admin_url = os.environ.get("AUTHGATE_TEST_PG_URL", DEFAULT_ADMIN_URL)
    why_not = None
    if mode in ("auto", "external"):
        why_not = _reachable(admin_url)
        if why_not is None:
            yield PostgresServer(admin_url)
            return
        if mode == "external":
            pytest.fail(f"PostgreSQL at {admin_url} is not reachable: {why_not}")
    try:
        cluster = ThrowawayCluster.create()
    except ClusterUnavailable as e:
        if mode == "cluster":
            pytest.fail(f"cannot start a throwaway PostgreSQL cluster: {e}")
        pytest.skip(f"no PostgreSQL: {admin_url} unreachable ({why_not}); no cluster ({e})")
    try:
        yield PostgresServer(cluster.admin_url, cluster)
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    try:
        run_sync(migrate(url))
        yield url
    finally:
        _ensure_running(postgres_server)
        postgres_server.drop_database(name)


@pytest.fixture
def clean_postgres_url(postgres_url: str) -> str:
    run_sync(empty_tables(postgres_url))
    return postgres_url


@pytest.fixture
def empty_postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)


def _ensure_running(server: PostgresServer) -> None:
    if server.cluster is not None and not server.cluster.running:
        server.cluster.start()


@pytest.fixture(params=[False, True], ids=["own-pool", "asyncpg-pool"])
def asyncpg_pool(request: pytest.FixtureRequest) -> bool:
    """Whether the adapters run on asyncpg's pool rather than ours (each test runs on both)."""
    return bool(request.param)


@pytest.fixture
def postgres_control(postgres_server: PostgresServer) -> Iterator[ThrowawayCluster]:
    if postgres_server.cluster is None:
        pytest.skip(
            "stopping the server needs a throwaway cluster (run with AUTHGATE_TEST_PG=cluster)"
        )
    try:
        yield postgres_server.cluster
    finally:
        _ensure_running(postgres_server)


@pytest.fixture
def throwaway_cluster_factory() -> Iterator[Callable[[], ThrowawayCluster]]:
    made: list[ThrowawayCluster] = []

    def make() -> ThrowawayCluster:
        try:
            cluster = ThrowawayCluster.create()
        except ClusterUnavailable as e:
            pytest.skip(f"cannot start a throwaway PostgreSQL cluster: {e}")
        made.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.destroy()
