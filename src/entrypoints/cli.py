"""The ``authgate`` command: serve, migrate, openapi."""

from __future__ import annotations

import argparse
import json
import sys

from authgate.entrypoints import composition
from authgate.entrypoints.config import Config, ConfigError, load
from authgate.entrypoints.rest.server import configure_logging
from authgate.entrypoints.server import build_app, serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="authgate", description="authgate sign-in service")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("serve", "run the server until SIGINT/SIGTERM"),
        ("migrate", "apply pending database migrations"),
        ("openapi", "print the OpenAPI document"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--config", required=True, metavar="FILE", help="YAML configuration")
    args = parser.parse_args(argv)
    try:
        config = load(args.config)
    except ConfigError as e:
        print(f"authgate: configuration error in {args.config}: {e}", file=sys.stderr)
        return 2
    try:
        return _run(args.command, config)
    except composition.StartupError as e:
        print(f"authgate: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # Typically the port is taken: one line, not a traceback.
        print(f"authgate: cannot start: {e}", file=sys.stderr)
        return 2


def _run(command: str, config: Config) -> int:
    if command == "openapi":
        print(json.dumps(composition.document(config), indent=2))
        return 0
    configure_logging()
    if command == "migrate":
        return composition.migrate(config)
    serve(composition.create_app(config, build_app), config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
