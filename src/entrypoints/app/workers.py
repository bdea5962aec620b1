"""``authgate serve`` on every core: worker processes sharing ``rest.port`` through
``SO_REUSEPORT``, and the parent that starts, watches and stops them.

Each worker is a fresh ``authgate serve`` process (not a fork: nothing is inherited half-open).
What they must agree on lives outside them (PostgreSQL, Redis), so a configuration that keeps
any of it inside one process is refused (:func:`refusal`).

The parent binds nothing. It starts worker 0 alone first (it creates the session key file on a
first start, and meets a refusal such as a schema that is behind or a taken port alone), then
the others; passes SIGTERM/SIGINT on; waits for each within ``rest.shutdown_timeout_seconds``
plus a margin (then kills); and when a worker dies unexpectedly, stops the others and exits
non-zero, so that the service manager restarts the whole service.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import time
from types import FrameType

import attrs

from authgate.entrypoints.app.config import Config, StartupError

log = logging.getLogger("authgate")

# Beyond rest.shutdown_timeout_seconds: the time a worker may take to close its pool, listener
# and outbox worker and flush its log before it is killed.
STOP_MARGIN_SECONDS = 10.0
_PR_SET_PDEATHSIG = 1


def worker_name(index: int) -> str:
    """How a worker's own log lines name it."""
    return f"authgate worker {index}"


def refusal(config: Config, workers: int) -> str | None:
    """Why ``workers`` processes cannot serve this configuration, in one line; None if they can."""
    if workers == 1:
        return None
    kept_inside: list[str] = []
    scheme = config.database.url.split(":", 1)[0]
    if scheme not in ("postgresql", "postgres"):
        kept_inside.append(f"database.url is {scheme} (accounts, sessions)")
    storage = config.ratelimit.storage
    if not storage.startswith(("redis://", "rediss://", "unix://")):
        kept_inside.append(f"ratelimit.storage is {storage.split(':', 1)[0]} (rate-limit counts)")
    if config.state.store == "memory":
        kept_inside.append("state.store is memory (pending sign-ins)")
    if config.session.revocation_channel == "local":
        kept_inside.append("session.revocation_channel is local (revocations)")
    if config.environment == "development":
        kept_inside.append("environment is development (the development provider's grants)")
    problems = []
    if kept_inside:
        problems.append(
            "workers share only a PostgreSQL database.url and a Redis ratelimit.storage, but "
            + ", ".join(kept_inside)
            + " would stay in one process"
        )
    metrics = config.metrics
    if metrics.enabled and metrics.port is None:
        problems.append(
            "metrics.port is null: on the shared rest.port a scrape reaches one worker at "
            "random (set a metrics.port: worker i serves its own counts on metrics.port + i)"
        )
    elif metrics.enabled and metrics.port is not None:
        last = metrics.port + workers - 1
        if last > 65535 or metrics.port <= config.rest.port <= last:
            problems.append(
                f"metrics ports {metrics.port}-{last} (metrics.port + worker) must be below "
                "65536 and leave out rest.port"
            )
    if not problems:
        return None
    return f"{workers} workers cannot serve this configuration: {'; '.join(problems)}"


def worker_config(config: Config, index: int) -> Config:
    """A worker's configuration: its metrics on a port of its own (``metrics.port + index``),
    since the counts are per process and a shared port would hand each scrape to any one."""
    if config.metrics.port is None:
        return config
    metrics = attrs.evolve(config.metrics, port=config.metrics.port + index)
    return attrs.evolve(config, metrics=metrics)


def report_ready(fd: int) -> None:
    """A worker tells its parent it serves (one byte on the pipe the parent passed it)."""
    with contextlib.suppress(OSError):
        os.write(fd, b"1")
        os.close(fd)


@attrs.define
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    ready_fd: int | None  # the read end of its ready pipe, until it reported or died

    @property
    def label(self) -> str:
        return f"{worker_name(self.index)} (pid {self.process.pid})"


def _die_with_parent(parent: int) -> None:
    """In the child before exec: SIGTERM when the parent dies, however it dies (a killed parent
    must not leave workers holding the port that its restarted self shares with them)."""
    if sys.platform.startswith("linux"):
        import ctypes  # here only: a single process never loads it

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


class Supervisor:
    """The parent of ``workers`` worker processes (:func:`supervise`)."""

    def __init__(self, config_file: str, config: Config, workers: int) -> None:
        self.config_file = config_file
        self.config = config
        self.count = workers
        self.workers: list[_Worker] = []
        self.signals: list[signal.Signals] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def _on_signal(self, signum: int, _: FrameType | None) -> None:
        if signum != signal.SIGCHLD:
            self.signals.append(signal.Signals(signum))

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT or a worker's death; the exit status."""
        handled = (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)
        previous = {s: signal.signal(s, self._on_signal) for s in handled}
        # Every signal also writes a byte here, which wakes the select below at once.
        previous_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        try:
            return self._serve()
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            for s, handler in previous.items():
                signal.signal(s, handler)
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)

    def _start(self, index: int) -> None:
        read, write = os.pipe()
        command = [sys.executable, "-m", "authgate.entrypoints.cli", "serve"]
        command += ["--config", self.config_file, "--worker", str(index), "--ready-fd", str(write)]
        parent = os.getpid()
        # Telemetry exported by OTLP tells the workers apart (their counts are their own and
        # would otherwise overwrite each other as the points of one source).
        env = dict(os.environ)
        attributes = env.get("OTEL_RESOURCE_ATTRIBUTES", "")
        env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(
            filter(None, (attributes, f"authgate.worker={index}"))
        )
        try:
            # This interpreter running this package; stdout and stderr inherited: one log.
            process = subprocess.Popen(  # noqa: S603
                command,
                pass_fds=(write,),
                env=env,
                stdin=subprocess.DEVNULL,
                preexec_fn=lambda: _die_with_parent(parent),  # the parent runs no threads
            )
        finally:
            os.close(write)  # the child's copy alone: its death reads as end of file
        worker = _Worker(index, process, read)
        self.workers.append(worker)
        log.info("%s started", worker.label)

    def _wait(self, timeout: float | None) -> None:
        """Until a signal, a worker's report or ``timeout``; reads the reports."""
        fds = [self._wake_r, *(w.ready_fd for w in self.workers if w.ready_fd is not None)]
        readable, _, _ = select.select(fds, [], [], timeout)
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass
        for worker in self.workers:
            if worker.ready_fd is not None and worker.ready_fd in readable:
                reported = os.read(worker.ready_fd, 1)
                os.close(worker.ready_fd)
                worker.ready_fd = None
                if reported:
                    log.info("%s serving", worker.label)

    def _serving(self, worker: _Worker) -> bool:
        return worker.ready_fd is None and worker.process.poll() is None

    def _serve(self) -> int:
        rest = self.config.rest
        log.info(
            "authgate starting %d workers on http://%s:%d (one port shared through SO_REUSEPORT)",
            self.count,
            rest.host,
            rest.port,
        )
        self._start(0)
        announced = False
        while True:
            if self.signals:
                return self._stop(f"{self.signals[0].name}", status=0)
            dead = [w for w in self.workers if w.process.poll() is not None]
            if dead and all(w.process.returncode == 0 for w in dead):
                # Stopped cleanly, so signalled directly: a service manager that signals every
                # process of the service may reach a worker before the parent has acted.
                return self._stop("a worker was stopped", status=0)
            if dead:
                for worker in dead:
                    log.error(
                        "%s exited with status %s; stopping the others",
                        worker.label,
                        worker.process.returncode,
                    )
                code = dead[0].process.returncode
                return self._stop("a worker exited", status=code if code > 0 else 1)
            if len(self.workers) == 1 and self._serving(self.workers[0]):
                for index in range(1, self.count):
                    self._start(index)
            if (
                not announced
                and len(self.workers) == self.count
                and all(self._serving(w) for w in self.workers)
            ):
                announced = True
                log.info(
                    "authgate serving on http://%s:%d with %d workers",
                    rest.host,
                    rest.port,
                    self.count,
                )
            self._wait(1.0)

    def _stop(self, why: str, status: int) -> int:
        """SIGTERM to every worker, then wait within the bound; a second signal, or the
        bound, kills the rest. ``status``, or 1 if a worker did not stop cleanly."""
        began = time.monotonic()
        bound = self.config.rest.shutdown_timeout_seconds + STOP_MARGIN_SECONDS
        log.info("authgate stopping %d workers (%s)", len(self.workers), why)
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        heard = len(self.signals)
        reported: set[int] = set()
        killed = False
        while True:
            for worker in self.workers:
                code = worker.process.poll()
                if code is not None and worker.index not in reported:
                    reported.add(worker.index)
                    log.info("%s stopped (exit status %s)", worker.label, code)
                    if code != 0 and status == 0:
                        status = 1
            running = [w for w in self.workers if w.process.poll() is None]
            if not running:
                break
            late = time.monotonic() - began > bound
            again = len(self.signals) > heard + (1 if heard == 0 else 0)
            if not killed and (late or again):
                killed = True
                reason = f"not stopped within {bound:g} s" if late else "signalled again"
                for worker in running:
                    log.warning("%s killed: %s", worker.label, reason)
                    worker.process.kill()
                status = status or 1
            self._wait(0.5)
        for worker in self.workers:
            if worker.ready_fd is not None:
                os.close(worker.ready_fd)
                worker.ready_fd = None
        elapsed = time.monotonic() - began
        log.info("authgate stopped: %d workers in %.3f s", len(self.workers), elapsed)
        return status


def supervise(config_file: str, config: Config, workers: int) -> int:
    """Run ``workers`` worker processes until SIGTERM/SIGINT; the exit status (0: a clean stop
    of every worker). Refuses, as a :class:`StartupError`, what workers cannot share."""
    why = refusal(config, workers)
    if why is not None:
        raise StartupError(why)
    return Supervisor(config_file, config, workers).run()
