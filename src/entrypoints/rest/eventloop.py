"""The event loop the server runs on (``rest.event_loop``): uvloop, whose transports, timers
and scheduling are C, by default when it is installed, else asyncio's own.
"""

from __future__ import annotations

import asyncio
from typing import Literal

EventLoop = Literal["uvloop", "asyncio"]


def uvloop_available() -> bool:
    """Whether uvloop can be imported (installed, and built for this interpreter)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def default_event_loop() -> EventLoop:
    """``uvloop`` when it is importable, else ``asyncio``."""
    return "uvloop" if uvloop_available() else "asyncio"


def new_event_loop(name: EventLoop) -> asyncio.AbstractEventLoop:
    """A new event loop of the kind named; ImportError when ``uvloop`` is named but missing."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: which kind of loop runs the caller."""
    loop = asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.partition(".")[0] == "uvloop" else "asyncio"
