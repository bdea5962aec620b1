"""Loopback ports for the servers the tests and benchmarks start."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Collection


def free_port() -> int:
    """A loopback TCP port free at the time of the call."""
    [port] = free_ports(1)
    return port


def free_ports(count: int, *, besides: Collection[int] = ()) -> list[int]:
    """``count`` distinct loopback ports free at the time of the call, none of ``besides``.
    Each is held open while the next is chosen: two calls of :func:`free_port` may return
    the same port, which the kernel is free to hand out again once it was closed (a service's
    API and scrape ports chosen so would collide)."""
    ports: list[int] = []
    with contextlib.ExitStack() as held:
        while len(ports) < count:
            s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
            if port not in besides:
                ports.append(port)
    return ports
