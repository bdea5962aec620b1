"""The REST layer's overhead and its peers, measured side by side in one run.

The same endpoint -- ``GET /items/{id}?view=...`` with a regex-checked path parameter, a
required regex-checked query parameter and a small JSON object in answer -- is served eight
ways, each by its own server process (one process, no workers) pinned to the same CPU:

    authgate         an authgate operation (attrs response, cattrs), tracing disabled
    authgate-traced  the same app traced as `authgate serve` traces it (Api.app's tracer) by an
                     SDK TracerProvider whose span processor hands spans to an exporter that
                     drops them
    raw-aiohttp      a plain aiohttp handler doing the same checks by hand, json.dumps of a dict
    authgate-asyncio authgate on asyncio's own loop (what rest.event_loop: asyncio serves on)
    fastapi-h11      FastAPI on uvicorn with h11 and asyncio's loop (the first stack measured)
    fastapi          FastAPI on uvicorn[standard]: httptools and uvloop
    litestar         Litestar on uvicorn[standard]
    blacksheep       BlackSheep on uvicorn[standard]

The peers are in ``bench/peers_rest.py``. authgate and raw aiohttp run on the loop
``authgate serve`` picks by default (uvloop when installed; ``--loop`` to choose).

A load generator of our own (keep-alive connections on raw asyncio protocols, pinned to the
other CPU; ``--client aiohttp`` uses aiohttp's client, which saturates its core first) drives
each server in turn for the same time, over several rounds whose order alternates and rotates.
The median of the rounds is reported, with p99 latency, the servers' CPU use and CPU time per
request, and the ratios against the targets. A round in which a server had less than 90 % of
its core measured whatever else ran on the machine and is set aside while others remain.

    .venv/bin/python bench/rest_layer.py            # the recorded run, about 3 minutes
    .venv/bin/python bench/rest_layer.py --quick    # a smoke run of a few seconds
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoint's annotations at run time.
import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
from peers_rest import ID_REGEX, PEERS, VIEW_REGEX, serve_peer

KINDS = ("authgate", "authgate-traced", "raw-aiohttp", "authgate-asyncio", *PEERS)

# (label, numerator, denominator, target): the issues' targets (2 and 13); None: shown only.
TARGETS: tuple[tuple[str, str, str, float | None], ...] = (
    ("authgate/raw-aiohttp", "authgate", "raw-aiohttp", 0.85),
    ("authgate-traced/raw-aiohttp", "authgate-traced", "raw-aiohttp", 0.6),
    ("authgate/fastapi", "authgate", "fastapi", 1.5),
    ("authgate/litestar", "authgate", "litestar", 1.0),
    ("authgate/blacksheep", "authgate", "blacksheep", 1.0),
    ("authgate/fastapi-h11", "authgate", "fastapi-h11", None),
    ("authgate/authgate-asyncio", "authgate", "authgate-asyncio", None),
)

# Requests the servers must answer identically (status and JSON body) before any load.
PROBES = (
    "/items/42?view=full",
    "/items/7?view=brief",
    "/items/4x2?view=full",
    "/items/42?view=all",
    "/items/42",
    "/items/42?view=full&view=brief",
)
LOAD_PATH = "/items/42?view=full"


# -- the endpoint, four ways ---------------------------------------------------------------


@attrs.frozen
class Item:
    id: str
    name: str
    view: str
    price_cents: int
    tags: list[str]


def _item(item_id: str, view: str) -> Item:
    return Item(id=item_id, name=f"item {item_id}", view=view, price_cents=1999, tags=["a", "b"])


def authgate_app(traced: bool) -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    from authgate.entrypoints.rest import Api, Call, path, pattern, query, required
    from authgate.entrypoints.rest.tracing import make_tracer_provider

    api = Api("bench", "1.0.0")

    @api.operation(
        "GET",
        "/items/{id}",
        params=[path("id", pattern(ID_REGEX)), query("view", required, pattern(VIEW_REGEX))],
        response=Item,
    )
    async def get_item(call: Call[None]) -> Item:
        return _item(call.path["id"], call.query["view"][0])

    tracer = None
    if traced:

        class DroppingExporter(SpanExporter):
            """Receives every span from the batch processor and keeps none."""

            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        # The same wiring as authgate.entrypoints.rest.serving.build_app, with the exporter given.
        provider = make_tracer_provider("authgate-bench", exporter=DroppingExporter())
        trace.set_tracer_provider(provider)
        tracer = provider.get_tracer("authgate")
    return api.app(tracer=tracer)


def raw_aiohttp_app() -> Any:
    from aiohttp import web

    id_re = re.compile(ID_REGEX)
    view_re = re.compile(VIEW_REGEX)

    def error(text: str) -> web.Response:
        return web.Response(
            body=json.dumps({"error": text}).encode(), status=400, content_type="application/json"
        )

    async def get_item(request: web.Request) -> web.Response:
        item_id = request.match_info["id"]
        if id_re.search(item_id) is None:
            return error("invalid parameter value in path: id")
        views = request.query.getall("view", ())
        if not views:
            return error("missing required request parameter in query: view")
        for v in views:
            if view_re.search(v) is None:
                return error("invalid parameter value in query: view")
        body = {
            "id": item_id,
            "name": f"item {item_id}",
            "view": views[0],
            "price_cents": 1999,
            "tags": ["a", "b"],
        }
        return web.Response(
            body=json.dumps(body, separators=(",", ":")).encode(), content_type="application/json"
        )

    app = web.Application()
    app.router.add_get("/items/{id}", get_item)
    return app


# -- a server process ----------------------------------------------------------------------


def serve(kind: str, cpu: int | None, loop: str, access_log: bool = False) -> None:
    """Child mode: serve ``kind`` on a loopback port, print the port, run until stdin closes.
    ``access_log``: an authgate kind logs as ``authgate serve`` does (its log handler on stderr,
    a line per request); the others ignore it."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY on accepted connections only when
    # the listening socket says so, and uvicorn (unlike aiohttp) relies on asyncio for it.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)

    # The parent holds our stdin: when it goes (normally or not), so do we.
    def watch_parent() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    port = sock.getsockname()[1]
    if kind in PEERS:
        print(port, flush=True)
        serve_peer(kind, sock)
        return
    from authgate.entrypoints.rest.eventloop import new_event_loop

    app = raw_aiohttp_app() if kind == "raw-aiohttp" else authgate_app(kind == "authgate-traced")
    print(port, flush=True)
    # authgate and raw aiohttp on the same loop: the one `authgate serve` would pick.
    if kind == "authgate-asyncio":
        loop = "asyncio"
    logged = access_log and kind != "raw-aiohttp"
    with asyncio.Runner(loop_factory=lambda: new_event_loop(loop)) as runner:  # type: ignore[arg-type]
        runner.run(_serve_aiohttp(app, sock, logged))


async def _serve_aiohttp(app: Any, sock: socket.socket, access_log: bool = False) -> None:
    from aiohttp import web

    if access_log:
        runner = web.AppRunner(app, handle_signals=False, **_service_access_log())
    else:
        # No access log for any of the four by default (uvicorn's is off too): it measures
        # logging, not the layer.
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


def _service_access_log() -> dict[str, Any]:
    """The access log as ``authgate serve`` writes it (the service's log handler on stderr)."""
    import logging

    from authgate.entrypoints.rest.accesslog import AccessLogger
    from authgate.entrypoints.rest.serving import configure_logging

    configure_logging()
    return {"access_log": logging.getLogger("authgate.access"), "access_log_class": AccessLogger}


@attrs.define
class Server:
    kind: str
    proc: subprocess.Popen[str]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (threads included)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_servers(kinds: Sequence[str], cpu: int | None, loop: str) -> list[Server]:
    procs = []
    for kind in kinds:
        args = [sys.executable, os.path.abspath(__file__), "--serve", kind, "--loop", loop]
        if cpu is not None:
            args += ["--cpu", str(cpu)]
        procs.append(
            (kind, subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        )
    servers = []
    for kind, proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"{kind} server did not start (exit status {proc.poll()})")
        servers.append(Server(kind, proc, int(line)))
    return servers


def stop_servers(servers: Sequence[Server]) -> None:
    for s in servers:
        if s.proc.poll() is None:
            s.proc.terminate()
    for s in servers:
        try:
            s.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            s.proc.kill()
            s.proc.wait()
        if s.proc.stdin is not None:
            s.proc.stdin.close()
        if s.proc.stdout is not None:
            s.proc.stdout.close()


# -- the load generator --------------------------------------------------------------------


@attrs.frozen
class Sample:
    rps: float
    p99_ms: float
    server_cpu: float  # share of one core the server used while recorded
    server_us: float  # server CPU microseconds per answered request
    client_cpu: float  # share of its core the load generator used while recorded
    errors: int


async def check_equivalence(servers: Sequence[Server]) -> None:
    """Every server answers every probe with the same status and JSON body."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        reference: dict[str, tuple[int, Any]] = {}
        for server in servers:
            for probe in PROBES:
                async with session.get(server.base + probe) as r:
                    raw = await r.read()
                    try:
                        answer = (r.status, json.loads(raw))
                    except ValueError:
                        answer = (r.status, raw)
                expected = reference.setdefault(probe, answer)
                if answer != expected:
                    raise SystemExit(
                        f"{server.kind} answers GET {probe} with {answer}, "
                        f"{servers[0].kind} with {expected}"
                    )


class Window:
    """The recorded window of one load: latencies of answers sent and received inside it."""

    def __init__(self, start: float, end: float, max_requests: int) -> None:
        self.start, self.end, self.max_requests = start, end, max_requests
        self.latencies: list[float] = []
        self.errors = 0
        self.sent = 0

    def more(self, now: float) -> bool:
        """Whether a connection may send another request at ``now``."""
        if now >= self.end or self.sent >= self.max_requests:
            return False
        self.sent += 1
        return True

    def answered(self, t0: float, t1: float, ok: bool) -> None:
        if self.start <= t0 and t1 <= self.end:
            if ok:
                self.latencies.append(t1 - t0)
            else:
                self.errors += 1


class LeanConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection sending a fixed request whenever the previous answer
    is complete. It parses only the status and Content-Length, so it costs the load generator a
    fraction of what a full client does (aiohttp's client, tried first, saturated its core before
    the aiohttp servers did)."""

    def __init__(self, request: bytes, window: Window, done: asyncio.Future[None]) -> None:
        self.request, self.window, self.done = request, window, done
        self.buffer = b""
        self.t0 = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.t0 = now = time.perf_counter()
        if self.window.more(now):
            self.transport.write(self.request)
        else:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        head_end = buffer.find(b"\r\n\r\n")
        if head_end < 0:
            self.buffer = buffer
            return
        head = buffer[:head_end].lower()
        at = head.find(b"\r\ncontent-length:")
        if at < 0:
            self._fail(ValueError("an answer without Content-Length"))
            return
        line_end = head.find(b"\r\n", at + 2)
        length = int(head[at + 17 : line_end if line_end >= 0 else len(head)])
        if len(buffer) < head_end + 4 + length:
            self.buffer = buffer
            return
        self.buffer = buffer[head_end + 4 + length :]
        self.window.answered(self.t0, time.perf_counter(), head[9:12] == b"200")
        self._send()

    def _fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
        if self.transport is not None:
            self.transport.abort()

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def lean_load(server: Server, connections: int, window: Window) -> None:
    loop = asyncio.get_running_loop()
    request = (
        f"GET {LOAD_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "User-Agent: authgate-bench\r\nAccept: */*\r\n\r\n"
    ).encode()
    dones = []
    for _ in range(connections):
        done: asyncio.Future[None] = loop.create_future()
        await loop.create_connection(
            lambda d=done: LeanConnection(request, window, d),  # type: ignore[misc]
            "127.0.0.1",
            server.port,
        )
        dones.append(done)
    await asyncio.gather(*dones)


async def aiohttp_load(server: Server, connections: int, window: Window) -> None:
    import aiohttp

    url = server.base + LOAD_PATH
    clock = time.perf_counter
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=10)
    ) as session:

        async def worker() -> None:
            while window.more(t0 := clock()):
                async with session.get(url) as r:
                    await r.read()
                    ok = r.status == 200
                window.answered(t0, clock(), ok)

        await asyncio.gather(*(worker() for _ in range(connections)))


async def drive(
    server: Server,
    *,
    client: str,
    connections: int,
    warmup: float,
    duration: float,
    max_requests: int,
) -> Sample:
    """Closed-loop load: ``connections`` keep-alive connections, each sending the next request
    when the previous answer is read; ``warmup`` seconds unrecorded, then ``duration`` seconds
    recorded. Stops at the deadline or after ``max_requests``, whichever comes first."""
    clock = time.perf_counter
    start = clock() + warmup
    window = Window(start, start + duration, max_requests)
    load = lean_load if client == "lean" else aiohttp_load
    task = asyncio.ensure_future(load(server, connections, window))
    await asyncio.sleep(max(0.0, start - clock()))
    cpu0, own0, t0 = server.cpu_seconds(), time.process_time(), clock()
    await asyncio.sleep(max(0.0, window.end - clock()))
    cpu1, own1, t1 = server.cpu_seconds(), time.process_time(), clock()
    await asyncio.wait_for(task, timeout=30)
    latencies = sorted(window.latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
    return Sample(
        rps=len(latencies) / duration,
        p99_ms=p99 * 1000,
        server_cpu=(cpu1 - cpu0) / (t1 - t0),
        server_us=(cpu1 - cpu0) / max(1, len(latencies)) * 1e6,
        client_cpu=(own1 - own0) / (t1 - t0),
        errors=window.errors,
    )


# -- the run ---------------------------------------------------------------------------------


def pick_cpus() -> tuple[int | None, int | None]:
    """(server CPU, client CPU): two distinct CPUs, or no pinning when there is only one."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return cpus[0], cpus[1]


def _load_average() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def run(args: argparse.Namespace) -> int:
    server_cpu, client_cpu = pick_cpus()
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    pinning = (
        f"servers on CPU {server_cpu}, load generator on CPU {client_cpu}"
        if server_cpu is not None
        else "one CPU only: nothing pinned, figures are not meaningful"
    )
    print(
        f"REST layer benchmark: GET {LOAD_PATH}, {args.client} client, "
        f"{args.connections} connections, "
        f"{args.rounds} round(s) x {args.duration:g} s per server (+{args.warmup:g} s warm-up); "
        f"{pinning}; authgate and raw-aiohttp on the {args.loop} loop; "
        f"load average {_load_average()}",
        flush=True,
    )
    servers = start_servers(args.servers, server_cpu, args.loop)
    try:
        asyncio.run(check_equivalence(servers))
        print(f"equivalence: all {len(servers)} servers answer the {len(PROBES)} probes alike")
        samples: dict[str, list[Sample]] = {k: [] for k in args.servers}
        for n in range(args.rounds):
            # Alternate the order so that no server always runs first (or last) in a round.
            order = servers if n % 2 == 0 else list(reversed(servers))
            order = order[n // 2 % len(order) :] + order[: n // 2 % len(order)]
            for server in order:
                sample = asyncio.run(
                    drive(
                        server,
                        client=args.client,
                        connections=args.connections,
                        warmup=args.warmup,
                        duration=args.duration,
                        max_requests=args.max_requests,
                    )
                )
                samples[server.kind].append(sample)
                if args.verbose:
                    print(
                        f"  round {n + 1} {server.kind:<16} {sample.rps:9.0f} req/s "
                        f"p99 {sample.p99_ms:6.2f} ms  server CPU {sample.server_cpu:4.0%} "
                        f"({sample.server_us:.0f} us/req)  client CPU {sample.client_cpu:4.0%}",
                        flush=True,
                    )
    finally:
        stop_servers(servers)
    return report(samples)


FULL_CORE = 0.9
"""A recording in which the server used less of its core than this was disturbed."""


def report(samples: dict[str, list[Sample]]) -> int:
    """Print the medians over the rounds and the ratios; non-zero when any answer was not 200.

    A recording in which the server did not get (nearly) all of its core measured whatever else
    ran on the machine, not the server: such rounds are set aside when others remain.
    """
    rps: dict[str, float] = {}
    cost: dict[str, float] = {}
    disturbed = []
    print()
    print(
        f"{'server':<16} {'req/s':>9} {'(min-max)':>15} {'p99 ms':>7} {'server CPU':>10} "
        f"{'us/req':>7} {'client CPU':>10} {'rounds':>7} {'errors':>6}"
    )
    for kind, every in samples.items():
        s = [x for x in every if x.server_cpu >= FULL_CORE]
        if not s:
            s = every
            disturbed.append(kind)
        each = [x.rps for x in s]
        rps[kind] = statistics.median(each)
        cost[kind] = statistics.median(x.server_us for x in s)
        print(
            f"{kind:<16} {rps[kind]:9.0f} {f'({min(each):.0f}-{max(each):.0f})':>15} "
            f"{statistics.median(x.p99_ms for x in s):7.2f} "
            f"{statistics.median(x.server_cpu for x in s):10.0%} {cost[kind]:7.1f} "
            f"{statistics.median(x.client_cpu for x in s):10.0%} "
            f"{f'{len(s)}/{len(every)}':>7} {sum(x.errors for x in every):6d}"
        )
    print()
    for label, num, den, target in TARGETS:
        if num not in rps or den not in rps:
            continue
        ratio = rps[num] / rps[den] if rps[den] else 0.0
        by_cost = cost[den] / cost[num] if cost[num] else 0.0
        verdict = (
            "no target"
            if target is None
            else f"target >= {target:.2f}: {'met' if ratio >= target else 'MISSED'}"
        )
        print(
            f"ratio {label:<28} {ratio:5.2f}  ({verdict}; by server CPU per request {by_cost:.2f})"
        )
    print(
        f"\n(rounds: those in which the server had at least {FULL_CORE:.0%} of its core; "
        "the others measured the rest of the machine)"
    )
    if disturbed:
        print(
            f"WARNING: {', '.join(disturbed)} never had its core to itself: something else was "
            "running on the machine (or the load generator could not keep up); these figures "
            "are not reliable"
        )
    return 1 if any(x.errors for s in samples.values() for x in s) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rounds", type=int, help="rounds over the servers (default 10)")
    parser.add_argument("--duration", type=float, help="recorded seconds per server and round")
    parser.add_argument("--warmup", type=float, help="unrecorded seconds before each recording")
    parser.add_argument("--connections", type=int, default=16, help="concurrent connections")
    parser.add_argument("--max-requests", type=int, default=2_000_000, help="per recording")
    parser.add_argument(
        "--client",
        choices=("lean", "aiohttp"),
        default="lean",
        help="load generator: lean asyncio protocol (default) or aiohttp's client",
    )
    parser.add_argument(
        "--servers",
        type=lambda v: [k for k in KINDS if k in v.split(",")],
        default=list(KINDS),
        help="comma-separated subset of " + ",".join(KINDS) + " (for investigation)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every round")
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        help="event loop of authgate and raw-aiohttp (default: authgate's own default, uvloop "
        "when installed); the peers run on the loop of their stack",
    )
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--access-log", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.loop is None:
        from authgate.entrypoints.rest.eventloop import default_event_loop

        args.loop = default_event_loop()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            serve(args.serve, args.cpu, args.loop, args.access_log)
        return 0
    quick = args.quick
    args.rounds = args.rounds or (2 if quick else 10)
    args.duration = args.duration or (0.3 if quick else 2.0)
    args.warmup = args.warmup if args.warmup is not None else (0.1 if quick else 0.3)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
