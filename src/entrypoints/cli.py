"""The ``authgate`` command: serve, migrate, openapi, and the operator's commands (accounts,
sessions, keys, provider-tokens, config; :mod:`authgate.entrypoints.operator`)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import linecache
import logging
import os
import select
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import yaml

from authgate import __version__
from authgate.entrypoints.app import build, stores
from authgate.entrypoints.app.config import Config, ConfigError, StartupError, load, variable_of
from authgate.entrypoints.app.serving import build_app, check_listeners, serve
from authgate.entrypoints.rest.serving import configure_logging

# The configuration file of every command run without --config.
CONFIG_VARIABLE = "AUTHGATE_CONFIG"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="authgate", description="authgate sign-in service")
    parser.add_argument("--version", action="version", version=f"authgate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("serve", "run the server until SIGINT/SIGTERM"),
        ("migrate", "apply pending database migrations"),
        ("openapi", "print the OpenAPI document"),
    ):
        command = _with_config(commands.add_parser(name, help=text))
        if name == "serve":
            _serve_options(command)
    _operator_commands(commands)
    args = parser.parse_args(argv)
    try:
        config = load(args.config)
    except ConfigError as e:
        print(f"authgate: configuration error in {args.config}: {e}", file=sys.stderr)
        return 2
    try:
        status = _run(args, config)
        sys.stdout.flush()  # a reader that went away shows here when the output was short
        return status
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # another pipe, a socket: not the reader of our output
        _end_as_a_closed_pipe_does()
    except StartupError as e:
        _last_words(f"authgate: {e}")
        return 2
    except OSError as e:
        # Typically the port is taken: one line, not a traceback.
        _last_words(f"authgate: cannot start: {e}")
        return 2


def _last_words(line: str) -> None:
    """Why the command ends, as the last line on stderr: the log's handlers are flushed and
    closed first (the service's writes its lines from a thread, a little later than logged),
    so that what was logged before comes before it, as it happened."""
    logging.shutdown()
    print(line, file=sys.stderr)


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (``authgate openapi | head``)."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return False
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poll.poll(0))


def _end_as_a_closed_pipe_does() -> NoReturn:
    """End quietly, as other commands do when the reader of their output goes away: by
    SIGPIPE, which a shell reports as status 141 (Python ignores the signal and raises
    BrokenPipeError instead). What the command opened was closed as the error passed by."""
    # Nothing more reaches the reader, and the interpreter's last flush must not complain.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    raise SystemExit(128 + signal.SIGPIPE)  # where the signal cannot end the process


def _with_config(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--config FILE``, else ``$AUTHGATE_CONFIG`` (as ``scripts/run`` takes it): every
    command finds the configuration the same way."""
    default = os.environ.get(CONFIG_VARIABLE) or None
    parser.add_argument(
        "--config",
        required=default is None,
        default=default,
        metavar="FILE",
        help=f"YAML configuration (default: ${CONFIG_VARIABLE}"
        + (f", now {default}" if default else ", which is not set")
        + ")",
    )
    return parser


def _serve_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="worker processes sharing rest.port (SO_REUSEPORT), one per core; overrides "
        "rest.workers (default 1). More than one needs a PostgreSQL database.url and a Redis "
        "ratelimit.storage; worker i serves its metrics on metrics.port + i",
    )
    # What the parent of the workers tells each one; not for people.
    serve.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


# How every command that takes an account names it: its id, one of its identities (as the API's
# providerId shows it, or without the "user:"), or an email address that only it has.
ACCOUNT = "ID|user:PROVIDER:SUBJECT|PROVIDER:SUBJECT|EMAIL"
ACCOUNT_HELP = (
    "the account id, an identity (the API's providerId user:PROVIDER:SUBJECT, or "
    "PROVIDER:SUBJECT) or an email address"
)


def _operator_commands(commands: Any) -> None:
    """The operator's commands, each named ``"<group> <action>"``."""
    accounts = _group(
        commands,
        "accounts",
        "show or delete an account",
        show="print an account as JSON (exit 1: no such account)",
        delete="delete an account, its identities and sessions (audited)",
    )
    for action in accounts.values():
        action.add_argument("account", metavar=ACCOUNT, help=ACCOUNT_HELP)
    sessions = _group(
        commands,
        "sessions",
        "end an account's sessions",
        revoke="end every live session of an account (audited)",
    )
    sessions["revoke"].add_argument("--account", required=True, metavar=ACCOUNT, help=ACCOUNT_HELP)
    _group(
        commands,
        "keys",
        "rotate and prune the session signing keys",
        rotate="put a new signing key first in session.keys_file (the others keep verifying); "
        "instances sign with it once restarted. Removes nothing (see keys prune)",
        prune="remove the keys that stopped signing more than session.absolute_max_seconds "
        "ago; adds nothing. Not session.ttl_seconds, although no token outlives it: running "
        "instances keep signing with the old key until they restart, which the file does not "
        "record; the longest a session lasts is the margin that covers a late restart",
    )
    _group(
        commands,
        "provider-tokens",
        "the provider tokens kept for revocation",
        rekey="re-seal every kept provider token under the first key of "
        "provider_tokens.keys, so that the older keys can be removed",
    )
    _client_commands(commands)
    _group(
        commands,
        "config",
        "check the configuration",
        check="load the configuration, reach the database and each provider's discovery and "
        "key set; one line per check (exit 0: all pass, 1: a check failed, 2: unusable "
        "configuration)",
    )


def _client_commands(commands: Any) -> None:
    """``clients``: the OpenID Provider's clients beyond the configuration file."""
    clients = _group(
        commands,
        "clients",
        "the OpenID Provider's clients kept in the database (added here, or registered at "
        "run time)",
        list="list every client: client_id, origin (configuration, operator, registration), "
        "type and name, tab-separated",
        show="print a client's metadata as JSON (exit 1: no such client)",
        add="add a client from RFC 7591 metadata (a JSON or YAML file, or options); prints "
        "its client_id and, for a confidential client, its secret, shown this once",
        remove="remove a stored client: its tokens are revoked and its grants removed (a "
        "client of the configuration is read-only)",
        token="print a new initial access token for one dynamic registration",  # noqa: S106
    )
    for action in ("show", "remove"):
        clients[action].add_argument("client_id", metavar="CLIENT_ID")
    add = clients["add"]
    add.add_argument("--file", metavar="FILE", help="RFC 7591 client metadata, JSON or YAML")
    add.add_argument("--client-id", metavar="ID", help="the client_id (default: a random one)")
    add.add_argument("--name", help="client_name")
    add.add_argument(
        "--redirect-uri", action="append", metavar="URI", help="a redirect URI (repeatable)"
    )
    add.add_argument(
        "--public",
        action="store_true",
        help="a public client (token_endpoint_auth_method none, with PKCE); default: a "
        "confidential one with a generated secret (client_secret_basic)",
    )
    add.add_argument(
        "--grant-type", action="append", metavar="TYPE", help="a grant type (repeatable)"
    )
    add.add_argument("--scope", help="the scopes it may ask for, space-separated")
    clients["token"].add_argument(
        "--expires-in",
        type=_duration,
        metavar="DURATION",
        help="how long the token lasts: seconds, or 30m, 12h, 7d (default: "
        "registration.initial_token_seconds)",
    )


def _duration(text: str) -> dt.timedelta:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    try:
        seconds = int(number) * units[unit]
    except ValueError:
        seconds = 0
    if seconds < 1:
        raise argparse.ArgumentTypeError(f"a duration such as 3600, 30m, 12h or 7d, not {text!r}")
    return dt.timedelta(seconds=seconds)


def _client_document(args: argparse.Namespace) -> dict[str, Any]:
    """The metadata of ``clients add``: the file's, then the options over it."""
    document: dict[str, Any] = {}
    if args.file is not None:
        try:
            loaded = yaml.safe_load(Path(args.file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise StartupError(f"clients add: cannot read {args.file}: {e}") from None
        if not isinstance(loaded, dict):
            raise StartupError(f"clients add: {args.file} must hold a JSON or YAML object")
        document.update(loaded)
    if args.name is not None:
        document["client_name"] = args.name
    if args.redirect_uri:
        document["redirect_uris"] = args.redirect_uri
    if args.public:
        document["token_endpoint_auth_method"] = "none"  # noqa: S105 - a method
    if args.grant_type:
        document["grant_types"] = args.grant_type
    if args.scope is not None:
        document["scope"] = args.scope
    return document


def _group(commands: Any, name: str, help: str, **actions: str) -> dict[str, Any]:
    """A command ``name`` whose ``actions`` (action -> help) each take ``--config``."""
    group = commands.add_parser(name, help=help)
    parsers = group.add_subparsers(dest="action", required=True)
    return {a: _with_config(parsers.add_parser(a, help=h)) for a, h in actions.items()}


def _run(args: argparse.Namespace, config: Config) -> int:
    command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
    if command == "openapi":
        print(json.dumps(build.document(config), indent=2))
        return 0
    if command not in ("serve", "migrate"):
        return _operate(command, args, config)
    configure_logging()
    # fido2 writes an INFO line at every passkey ceremony; the sign-in's audit line says it.
    logging.getLogger("fido2").setLevel(logging.WARNING)
    if command == "migrate":
        return stores.migrate(config)
    return _serve(args, config)


def _serve(args: argparse.Namespace, config: Config) -> int:
    """One process serving, or (``--workers``/``rest.workers`` above 1) the parent of the
    worker processes, or one of those (``--worker``)."""
    from authgate.entrypoints.app import workers

    worker: int | None = args.worker
    if worker is None:
        count: int = args.workers or config.rest.workers
        if count > 1:
            return workers.supervise(args.config, config, count)
    else:
        config = workers.worker_config(config, worker)
    ready_fd: int | None = args.ready_fd
    on_ready = None if ready_fd is None else (lambda _: workers.report_ready(ready_fd))
    check_listeners(config, worker, lambda setting: variable_of(args.config, setting))
    # attrs keeps the source of every generated method in linecache for debuggers, which a
    # server never reads (docs/benchmarks.md): emptied before the application is built.
    linecache.clearcache()
    serve(build.create_app(config, build_app), config, on_ready, worker)
    # After a stop, the interpreter's final collections would walk every object the service
    # made, to free memory the system takes back anyway: frozen objects are left out of them
    # (atexit handlers, thread joins and the streams' flushing still run).
    gc.disable()
    gc.freeze()
    return 0


def _operate(command: str, args: argparse.Namespace, config: Config) -> int:
    """One of the operator's commands; their module is not loaded by the server (it brings
    the provider events' modules, which the server loads only when a receiver is on)."""
    from authgate.entrypoints import operator

    run = {
        "keys rotate": lambda: operator.rotate_keys(config),
        "keys prune": lambda: operator.prune_keys(config),
        "accounts show": lambda: asyncio.run(operator.show_account(config, args.account)),
        "accounts delete": lambda: asyncio.run(operator.delete_account(config, args.account)),
        "sessions revoke": lambda: asyncio.run(operator.revoke_sessions(config, args.account)),
        "provider-tokens rekey": lambda: asyncio.run(operator.rekey_provider_tokens(config)),
        "config check": lambda: asyncio.run(operator.check_config(config)),
        "clients list": lambda: asyncio.run(operator.list_clients(config)),
        "clients show": lambda: asyncio.run(operator.show_client(config, args.client_id)),
        "clients add": lambda: asyncio.run(
            operator.add_client(config, _client_document(args), args.client_id)
        ),
        "clients remove": lambda: asyncio.run(operator.remove_client(config, args.client_id)),
        "clients token": lambda: asyncio.run(operator.new_initial_token(config, args.expires_in)),
    }
    return run[command]()


if __name__ == "__main__":
    raise SystemExit(main())
