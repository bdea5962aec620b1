"""Container probe: ``probe.py liveness|readiness`` exits 0 when ``GET /health/<probe>`` on
``127.0.0.1:$PORT`` (default 8080) answers 200, else 1. For HEALTHCHECK and compose, which
run a command rather than an HTTP request; orchestrators with HTTP probes call the paths."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def main(argv: list[str]) -> int:
    """Run the probe named by ``argv[1]``; the exit status."""
    if len(argv) != 2 or argv[1] not in ("liveness", "readiness"):
        print("usage: probe.py liveness|readiness", file=sys.stderr)
        return 2
    url = f"http://127.0.0.1:{os.environ.get('PORT', '8080')}/health/{argv[1]}"
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return 0 if answer.status == 200 else 1
    except (urllib.error.URLError, OSError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
