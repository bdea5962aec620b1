"""SIGTERM and SIGINT shut the server down gracefully: the in-flight request finishes, new
connections are refused, the process exits 0."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import time
from pathlib import Path

import aiohttp
import pytest
import yaml

from tests.support.ports import free_port, free_ports

HERE = Path(__file__).parent


def write_config(folder: Path, port: int) -> Path:
    path = folder / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "rest": {"port": port, "host": "127.0.0.1", "shutdown_timeout_seconds": 10},
                "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": True}},
                # parallel runs would collide on the default scrape port (9464)
                "metrics": {"port": free_ports(1, besides=(port,))[0]},
            }
        )
    )
    return path


STARTUP_SECONDS = 20


async def read_line(stream: asyncio.StreamReader, expected: str) -> str:
    async with asyncio.timeout(STARTUP_SECONDS):
        while True:
            line = (await stream.readline()).decode()
            if not line:
                raise AssertionError(f"the server exited before printing {expected}")
            if line.startswith(expected):
                return line.strip()


async def refuses_connections(port: int) -> bool:
    """True once a connection attempt is refused (within 5 s): the listener is closed."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            return True
        except ConnectionResetError:
            continue  # queued just as the listener closed: try again
        writer.close()
        await asyncio.sleep(0.02)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_graceful_shutdown(tmp_path: Path, signum: signal.Signals) -> None:
    port = free_port()
    config = write_config(tmp_path, port)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "slow_server.py"),
        str(config),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        assert await read_line(proc.stdout, "READY") == f"READY http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            in_flight = asyncio.ensure_future(session.get(f"http://127.0.0.1:{port}/slow"))
            await read_line(proc.stdout, "STARTED")

            proc.send_signal(signum)
            # The listener closes while the request is still being served …
            assert await refuses_connections(port)
            assert not in_flight.done()
            # … and the request, once its operation finishes, completes normally.
            proc.stdin.write(b"release\n")
            await proc.stdin.drain()
            async with asyncio.timeout(10):
                resp = await in_flight
            assert resp.status == 200
            assert await resp.json() == {"finished": True}
            resp.release()
        async with asyncio.timeout(15):
            assert await proc.wait() == 0
        assert await read_line(proc.stdout, "EXITED")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_authgate_serve_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    """The real command on the in-process defaults: built-in endpoints, then a clean exit."""
    port = free_port()
    config = write_config(tmp_path, port)
    with config.open("a") as f:
        # No database server and no key file to provide: the embedded, self-contained set-up.
        f.write("environment: development\n")
        f.write("database: {url: 'memory://'}\n")
        f.write("session: {generate_keys: true}\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "authgate.entrypoints.cli",
        "serve",
        "--config",
        str(config),
        cwd=tmp_path,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    try:
        line = await read_line_containing(proc.stderr, "listening on")
        assert f"http://127.0.0.1:{port}" in line
        async with aiohttp.ClientSession() as session:
            for path in ("/openapi.json", "/health/liveness", "/health/readiness"):
                async with session.get(f"http://127.0.0.1:{port}{path}") as resp:
                    assert resp.status == 200, path
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(15):
            assert await proc.wait() == 0
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
        rest = (await proc.stderr.read()).decode()
        assert "Traceback" not in rest
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def read_line_containing(stream: asyncio.StreamReader, expected: str) -> str:
    seen: list[str] = []
    async with asyncio.timeout(STARTUP_SECONDS):
        while True:
            line = (await stream.readline()).decode()
            if not line:
                raise AssertionError(f"the server exited before logging {expected!r}: {seen}")
            seen.append(line)
            if expected in line:
                return line.strip()


async def test_port_in_use_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_config(tmp_path, port)
        with config.open("a") as f:
            f.write("environment: development\n")
            f.write("database: {url: 'memory://'}\n")
            f.write("session: {generate_keys: true}\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "authgate.entrypoints.cli",
            "serve",
            "--config",
            str(config),
            cwd=tmp_path,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(STARTUP_SECONDS):
            _, err = await proc.communicate()
    assert proc.returncode == 2
    lines = err.decode().splitlines()
    assert "Traceback" not in err.decode()
    # Tried before anything is built: the only line, naming the setting to change.
    assert lines == [
        f"authgate: rest.port: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(choose another rest.port)"
    ]
