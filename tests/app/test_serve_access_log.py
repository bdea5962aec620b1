"""`rest.access_log` switches the access log of `authgate serve` on (default) and off."""

from __future__ import annotations

import contextlib
import http.client
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.ports import free_port, free_ports
from tests.support.waiting import GENEROUS_SECONDS

from .conftest import base_config, merge


@contextlib.contextmanager
def serving(
    tmp_path: Path,
    rest: dict[str, object],
    overrides: dict[str, Any] | None = None,
    umask: int = -1,
) -> Iterator[tuple[int, list[str]]]:
    """`authgate serve` on a free port until the block ends (then SIGTERM, exit 0 asserted);
    yields the port and a list that receives the process's stderr when it has stopped.
    ``overrides`` are merged into the configuration; ``umask`` is the process's (-1: ours)."""
    config = merge(base_config(tmp_path), overrides or {})
    [port] = free_ports(1, besides=(config["metrics"].get("port"),))
    config = merge(config, {"rest": {"port": port, "host": "127.0.0.1", **rest}})
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    process = subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
        stderr=subprocess.PIPE,
        text=True,
        umask=umask,
    )
    stderr: list[str] = []
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("authgate serve did not start")
                time.sleep(0.1)
        yield port, stderr
    finally:
        process.send_signal(signal.SIGTERM)
        stderr.append(process.communicate(timeout=20)[1])
    assert process.returncode == 0, stderr


def serve_and_get(tmp_path: Path, access_log: bool) -> str:
    with (
        serving(tmp_path, {"access_log": access_log}) as (port, stderr),
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveness") as response,
    ):
        assert response.status == 200
    return stderr[0]


def test_access_log_on_by_default(tmp_path: Path) -> None:
    assert "authgate.access 127.0.0.1 GET /health/liveness 200" in serve_and_get(tmp_path, True)


def test_access_log_off(tmp_path: Path) -> None:
    stderr = serve_and_get(tmp_path, False)
    assert "authgate listening" in stderr
    assert "authgate.access" not in stderr


def test_a_malformed_request_is_one_info_line_not_a_traceback(tmp_path: Path) -> None:
    with (
        serving(tmp_path, {}) as (port, stderr),
        socket.create_connection(("127.0.0.1", port), timeout=5) as s,
    ):
        s.sendall(b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n")
        answer = s.recv(100)
    assert b" 400 " in answer.split(b"\r\n")[0]
    assert "malformed HTTP request from 127.0.0.1 refused: " in stderr[0]
    assert "Traceback" not in stderr[0]
    assert " ERROR " not in stderr[0]


def test_a_path_cannot_forge_an_access_log_line(tmp_path: Path) -> None:
    # %0A decodes to a newline, %1B to ESC: written as is, the path would add a line of its
    # own choosing to the log and drive the terminal of whoever reads it.
    forged = "/nowhere%0A2030-01-01%2000:00:00%20INFO%20authgate.access%20forged%1B[2J"
    with serving(tmp_path, {}) as (port, stderr):
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{forged}")
        assert answer.value.code == 404
    lines = [line for line in stderr[0].splitlines() if "nowhere" in line or "forged" in line]
    assert len(lines) == 1, stderr[0]
    assert lines[0].endswith(
        " authgate.access 127.0.0.1 GET /nowhere\\n2030-01-01 00:00:00 INFO authgate.access "
        "forged\\x1b[2J 404 " + lines[0].rsplit(" ", 1)[1]
    )
    assert "\x1b" not in stderr[0]


# The log of `authgate serve` is written to stderr by a thread of its own, off the event loop:
# these tests hold it to the content, the order and the completeness of a line per request.

LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO authgate\.access 127\.0\.0\.1 GET "
    r"/health/liveness 200 \d+\.\dms$"
)


def get_many(port: int, count: int, path: str = "/health/liveness") -> None:
    """``count`` requests on one keep-alive connection, each answered 200."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for _ in range(count):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            assert response.status == 200
    finally:
        connection.close()


def access_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " authgate.access " in line]


def test_a_clean_stop_writes_every_line(tmp_path: Path) -> None:
    # SIGTERM right after the last answer: the lines still waiting to be written are written.
    with serving(tmp_path, {}) as (port, stderr):
        get_many(port, 200)
    lines = access_lines(stderr[0])
    assert len(lines) == 200, stderr[0]
    assert all(LINE.match(line) for line in lines), lines[:3]


def test_lines_are_written_while_serving(tmp_path: Path) -> None:
    # Not only at the stop: a line reaches stderr (a pipe here) while the service runs.
    with serving_streamed(tmp_path) as (port, lines):
        get_many(port, 1)
        wait_for(lambda: any(LINE.match(line) for line in lines), "the access line")


def test_the_log_keeps_the_order_of_events(tmp_path: Path) -> None:
    # An access line, another record (a refused malformed request, logged by aiohttp), another
    # access line: written in the order they happened.
    with serving(tmp_path, {}) as (port, stderr):
        get_many(port, 1)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n")
            assert b" 400 " in s.recv(100)
        get_many(port, 1)
    events = [
        line
        for line in stderr[0].splitlines()
        if " authgate.access " in line or "malformed HTTP request" in line
    ]
    assert len(events) == 4, stderr[0]
    assert LINE.match(events[0]), events
    assert " INFO aiohttp.server malformed HTTP request from 127.0.0.1 refused" in events[1]
    assert " INFO authgate.access 127.0.0.1 UNKNOWN / 400 " in events[2]  # its own line
    assert LINE.match(events[3]), events


def test_a_closed_stderr_does_not_stop_the_service(tmp_path: Path) -> None:
    # The reader of the log pipe goes away: the lines are lost, the service keeps answering
    # and still stops cleanly.
    with serving_streamed(tmp_path, read=False) as (port, _):
        get_many(port, 300)


def test_a_logging_configuration_of_its_own_is_kept(tmp_path: Path) -> None:
    # An application that embeds the server and configures logging its own way gets the
    # access log through that configuration (its format), as before.
    port = free_port()
    script = tmp_path / "embedded.py"
    script.write_text(
        "import logging, sys\n"
        "from authgate.entrypoints.rest import Api\n"
        "from authgate.entrypoints.rest.serving import ServerSettings, build_app, serve\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stderr,\n"
        "                    format='custom|%(levelname)s|%(name)s|%(message)s')\n"
        "settings = ServerSettings(port=int(sys.argv[1]))\n"
        "serve(build_app(Api('Embedded', '1.0.0'), settings), settings)\n"
    )
    process = subprocess.Popen(
        [sys.executable, str(script), str(port)], stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_port(port)
        get_many(port, 1)
    finally:
        process.send_signal(signal.SIGTERM)
        stderr = process.communicate(timeout=20)[1]
    assert process.returncode == 0, stderr
    lines = access_lines(stderr.replace("|authgate.access|", " authgate.access "))
    assert len(lines) == 1, stderr
    assert re.fullmatch(
        r"custom\|INFO authgate\.access 127\.0\.0\.1 GET /health/liveness 200 \d+\.\dms",
        lines[0],
    ), lines


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll until ``condition()``; fail after a generous deadline (a hang, not a timing)."""
    deadline = time.monotonic() + GENEROUS_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: still not the case after {GENEROUS_SECONDS} s")
        time.sleep(0.02)


def wait_for_port(port: int) -> None:
    wait_for(lambda: port_open(port), "the server listening")


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@contextlib.contextmanager
def serving_streamed(tmp_path: Path, read: bool = True) -> Iterator[tuple[int, list[str]]]:
    """`authgate serve` whose stderr lines are collected while it runs (``read``), or whose
    stderr pipe is closed by its reader once it listens (not ``read``); SIGTERM at the end,
    exit 0 asserted."""
    port = free_port()
    config = merge(base_config(tmp_path), {"rest": {"port": port, "host": "127.0.0.1"}})
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    process = subprocess.Popen(
        [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stderr.readline, "")))
    try:
        wait_for_port(port)
        if read:
            reader.start()
        else:
            process.stderr.close()
        yield port, lines
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        if read:
            reader.join(timeout=20)
    assert process.returncode == 0, "".join(lines)


def test_durations_are_not_whole_milliseconds_on_uvloop(tmp_path: Path) -> None:
    # uvloop's loop.time() (what aiohttp measures with) moves in whole milliseconds: a line's
    # duration comes from the service's own clock, so fast answers are not all "0.0ms".
    with serving(tmp_path, {"event_loop": "uvloop"}) as (port, stderr):
        get_many(port, 30)
    lines = access_lines(stderr[0])
    assert len(lines) == 30
    durations = [float(line.rsplit(" ", 1)[1].removesuffix("ms")) for line in lines]
    assert all(0 <= d < 1000 for d in durations), durations
    assert any(d != int(d) for d in durations), durations
