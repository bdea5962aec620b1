"""The operator's commands, on what a running service uses (its database, its session key
file, its providers), opened from the same configuration by the composition root. Account
changes go through a unit of work with their audit event and are then announced on the
revocation channel, so running instances drop the ended sessions from their caches.

Each command prints its result on standard output; a failure is one line on standard error and
an exit status: 1 when the thing asked for does not exist (or a check failed), 2 when the
configuration, the database or the key file cannot be used (as ``serve`` and ``migrate``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import attrs

from authgate.adapters.clock import SystemClock
from authgate.adapters.http_fetch import provider_session
from authgate.adapters.jose.key_sets import KeySetUnavailable
from authgate.adapters.jose.keys import (
    SessionKeyError,
    StoredKey,
    list_key_file,
    missing_key_file,
    prune_key_file,
    rotate_key_file,
)
from authgate.adapters.provider.discovery import WELL_KNOWN
from authgate.adapters.provider.provider import OAuthIdentityProvider
from authgate.domain.errors import ProviderUnavailable
from authgate.domain.model import Account, ClientInfo, Outcome, ProviderIdentity
from authgate.domain.openid.registration import InvalidClientMetadata
from authgate.entrypoints.app import development
from authgate.entrypoints.app.build import Resources, check, open_resources, signin_face
from authgate.entrypoints.app.config import (
    Config,
    ProviderConfig,
    StartupError,
    client_registry,
    provider_on,
    reserved_client_ids,
)
from authgate.entrypoints.app.provider_events import receiver_routes
from authgate.entrypoints.app.signin import SignIn, open_providers
from authgate.entrypoints.app.stores import reach_database, reach_redis
from authgate.ports.provider import IdentityProvider
from authgate.ports.provider_tokens import TokenUnreadable
from authgate.services.audit import audit_event
from authgate.services.openid.registration import ClientAdministration, ClientIdTaken
from authgate.services.provider_events import Shape
from authgate.services.provider_tokens import enqueue_token_revocations

OPERATOR = "operator"  # the audit events' provider: no identity provider was involved


class NotFound(Exception):
    """What the command names does not exist (exit status 1); the text is one line."""


def _client(command: str) -> ClientInfo:
    """The audit events' client: the command line, not an address."""
    return ClientInfo("cli", f"authgate {command}")


def _fail(command: str, message: str, status: int) -> int:
    print(f"authgate: {command}: {message}", file=sys.stderr)
    return status


Command = Callable[[Resources, SignIn], Awaitable[int]]


async def _with_resources(config: Config, name: str, command: Command) -> int:
    """``command`` on the opened resources; :class:`NotFound` is its exit status 1."""
    resources = await open_resources(config)
    try:
        return await command(resources, signin_face(config, resources)[0])
    except NotFound as e:
        return _fail(name, str(e), 1)
    finally:
        await resources.close()


# -- accounts -------------------------------------------------------------------------------


async def _find_account(resources: Resources, ref: str) -> Account:
    """The account ``ref`` names (cli.ACCOUNT)."""
    identity = ProviderIdentity.parse(ref)
    if identity is not None:
        found = await resources.stores.accounts.find_by_identity(identity)
        if found is None:
            raise NotFound(f"no account holds the identity {identity.provider_id}")
        return found
    if "@" in ref:
        matches = await resources.stores.accounts.find_by_email(ref)
        if not matches:
            raise NotFound(f"no account has the email {ref}")
        if len(matches) > 1:
            ids = ", ".join(a.id for a in matches)
            raise NotFound(f"{len(matches)} accounts have the email {ref} ({ids}); show one by id")
        return matches[0]
    found = await resources.stores.accounts.get(ref)
    if found is None:
        raise NotFound(f"no account {ref}")
    return found


def _time(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if value else None


async def show_account(config: Config, ref: str) -> int:
    """``accounts show``: the account as JSON (never a token); 1 when nothing matches."""

    async def command(resources: Resources, _: SignIn) -> int:
        account = await _find_account(resources, ref)
        identities = await resources.stores.accounts.list_identities(account.id)
        now = resources.shared.clock.now()
        live = await resources.stores.session_records.live_for_account(account.id, now)
        document: dict[str, Any] = {
            "id": account.id,
            "email": account.email,
            "emailVerified": account.email_verified,
            "name": account.name,
            "createdAt": _time(account.created_at),
            "lastSignInAt": _time(account.last_login_at),
            "providers": [
                {
                    "provider": i.identity.provider,
                    "providerId": i.identity.provider_id,  # as the API shows it
                    "email": i.email,
                    "emailVerified": i.email_verified,
                    "linkedAt": _time(i.linked_at),
                    "isPrimary": i.is_primary,
                    # What the provider's events said (docs/providers.md, "Provider events").
                    "disabledReason": i.disabled_reason,
                    "emailDisabled": i.email_disabled,
                }
                for i in identities
            ],
            "liveSessions": len(live),
        }
        if resources.stores.passkeys is not None:
            document["passkeys"] = [
                {
                    "id": p.id,
                    "name": p.name,
                    "createdAt": _time(p.created_at),
                    "lastUsedAt": _time(p.last_used_at),
                    "backedUp": p.backed_up,
                    "signCount": p.sign_count,
                }
                for p in await resources.stores.passkeys.for_account(account.id)
            ]
        print(json.dumps(document, indent=2))
        return 0

    return await _with_resources(config, "accounts show", command)


async def delete_account(config: Config, ref: str) -> int:
    """``accounts delete``: the account, its identities, passkeys and sessions go in one
    transaction with the audit event; then the ended sessions are announced. 1: no match."""
    name = "accounts delete"

    async def command(resources: Resources, services: SignIn) -> int:
        now = resources.shared.clock.now()
        account_id = (await _find_account(resources, ref)).id
        async with resources.stores.units.begin() as tx:
            ended = await services.sessions.revoke_all_in(tx, account_id, now)
            # The running instances' workers revoke the provider tokens.
            await enqueue_token_revocations(tx, account_id, now)
            if not await tx.accounts.delete(account_id):
                raise NotFound(f"no account {account_id}")  # deleted meanwhile: roll back
            await tx.events.record(
                audit_event(now, OPERATOR, Outcome.ACCOUNT_DELETED, _client(name), account_id)
            )
        await services.sessions.announce(ended)
        print(f"authgate: deleted account {account_id} ({len(ended)} session(s) ended)")
        return 0

    return await _with_resources(config, name, command)


# -- sessions -------------------------------------------------------------------------------


async def revoke_sessions(config: Config, ref: str) -> int:
    """``sessions revoke --account``: end every live session of the account (audited as a
    sign-out everywhere, announced to running instances). 1 when nothing matches."""
    name = "sessions revoke"

    async def command(resources: Resources, services: SignIn) -> int:
        account_id = (await _find_account(resources, ref)).id
        ended = await services.sessions.revoke_all(
            account_id, client=_client(name), provider=OPERATOR
        )
        print(f"authgate: ended {len(ended)} session(s) of account {account_id}")
        return 0

    return await _with_resources(config, name, command)


# -- keys -----------------------------------------------------------------------------------


def rotate_keys(config: Config) -> int:
    """``keys rotate``: a new session key first in ``session.keys_file``, and a new RSA key
    when clients are registered or the file holds one; nothing is removed. 2 when the file
    cannot be read or written."""
    path = config.session.keys_file
    try:
        added = rotate_key_file(path, dt.datetime.now(dt.UTC), rsa=provider_on(config))
        for key in added:
            print(f"authgate: added {_key_kind(key)} {key.kid}; it signs once the service restarts")
        kids = [k.kid for k in list_key_file(path)]
    except SessionKeyError as e:
        return _fail("keys rotate", str(e), 2)
    print(f"authgate: {path} holds {len(kids)} key(s): {', '.join(kids)}")
    return 0


def _key_kind(key: StoredKey) -> str:
    return "RS256 key (ID and access tokens)" if key.algorithm == "RS256" else "session key"


def prune_keys(config: Config) -> int:
    """``keys prune`` (its help says why ``session.absolute_max_seconds``): nothing is added.
    2 when the file cannot be read or written."""
    path = config.session.keys_file
    retired_for = dt.timedelta(seconds=config.session.absolute_max_seconds)
    try:
        removed = prune_key_file(path, dt.datetime.now(dt.UTC), retired_for)
        kids = [k.kid for k in list_key_file(path)]
    except SessionKeyError as e:
        return _fail("keys prune", str(e), 2)
    for key in removed:
        kind = "RS256 key" if key.algorithm == "RS256" else "session key"
        print(f"authgate: removed {kind} {key.kid}")
    if not removed:
        print(
            "authgate: no session key stopped signing more than session.absolute_max_seconds "
            f"({config.session.absolute_max_seconds} s) ago; nothing removed"
        )
    print(f"authgate: {path} holds {len(kids)} key(s): {', '.join(kids)}")
    return 0


# -- provider tokens ------------------------------------------------------------------------


async def rekey_provider_tokens(config: Config) -> int:
    """``provider-tokens rekey``: 2 when no key is configured or a token opens under no
    configured key (one of its keys was removed too early)."""
    name = "provider-tokens rekey"

    async def command(resources: Resources, services: SignIn) -> int:
        sealer = resources.shared.sealer
        if sealer is None:
            return _fail(name, "provider_tokens.keys is empty: nothing is sealed", 2)
        try:
            done = await services.provider_tokens.rekey(resources.stores.provider_tokens)
        except TokenUnreadable as e:
            return _fail(name, f"a kept token cannot be opened: {e}", 2)
        pending = await resources.stores.revocation_outbox.pending()
        older = sum(1 for p in pending if p.sealed.key_id != sealer.seal_key_id)
        print(f"authgate: re-sealed {done} provider token(s) under key {sealer.seal_key_id}")
        if older:
            # Outbox rows keep the key they were sealed with: they are sent (or given up)
            # within provider_tokens.give_up_after_seconds.
            print(
                f"authgate: {older} pending revocation(s) still need an older key; keep it "
                "listed until they are done"
            )
        return 0

    return await _with_resources(config, name, command)


# -- config check ---------------------------------------------------------------------------


async def check_config(config: Config) -> int:
    """``config check``: one line per check; 0 when every check passes, else 1. A provider
    that this service's development identity provider serves is not fetched: it answers only
    once the service runs. Each failure names the URL it fetched (no query) and why."""
    check(config)  # what serve refuses before it opens anything: exit 2 as there
    print("config: ok")
    results = [
        _check_keys(config),
        await _check_reached("database", reach_database, config),
        await _check_reached("redis", reach_redis, config),
    ]
    served = _served_here(config)
    if served is None:
        results.append(False)
        served = {}
    providers: dict[str, IdentityProvider] = {}
    async with provider_session() as http:
        for name, settings in config.providers.items():
            try:
                # One at a time, so that one provider's unusable setting fails only its line.
                only = attrs.evolve(config, providers={name: settings})
                if name in served:
                    # Not fetched, but set up as serve sets it up, which refuses what it refuses.
                    _set_up_served(only, name, http)
                    print(
                        f"provider {name}: served by this service (development identity "
                        f"provider at {served[name]})"
                    )
                    continue
                providers[name] = open_providers(only, http, SystemClock())[name]
            except StartupError as e:
                print(f"provider {name}: FAILED {e}")
                results.append(False)
                continue
            results.append(await _check_provider(name, providers[name], settings))
        keys = config.provider_tokens.keys  # their form was checked with the configuration
        if not keys:
            print("provider tokens: none kept (provider_tokens.keys is empty; nothing is revoked)")
        else:
            print(f"provider tokens: ok ({len(keys)} key(s), sealing with {keys[0].id})")
        for route in receiver_routes(config):
            if route.shape is not Shape.RISC:
                continue
            if route.provider in served:
                print(f"provider {route.provider} security events: served by this service")
            elif route.provider in providers:
                results.append(await _check_security_events(config, route.provider, providers))
    return 0 if all(results) else 1


def _set_up_served(config: Config, name: str, http: aiohttp.ClientSession) -> None:
    """The adapter of a provider the development provider serves, made as ``serve`` makes it
    (:class:`StartupError` for what it refuses). Its development Apple key file is made at the
    first start: until then, a key of the same kind made for the check stands in for it."""
    key_file = config.providers[name].private_key_file
    if key_file is None or Path(key_file).exists():
        open_providers(config, http, SystemClock())
        return
    from authgate.entrypoints.devidp.keys import ensure_apple_key_file  # development only

    with tempfile.TemporaryDirectory() as folder:
        stand_in = str(Path(folder) / "apple-key.pem")
        ensure_apple_key_file(stand_in)
        settings = attrs.evolve(config.providers[name], private_key_file=stand_in)
        open_providers(attrs.evolve(config, providers={name: settings}), http, SystemClock())


def _served_here(config: Config) -> dict[str, str] | None:
    """The providers the development identity provider of this service serves: name -> its
    issuer (empty when it is off); None, after a failure line, when its issuer is unusable."""
    if not (config.dev.identity_provider and development.enabled(config)):
        return {}
    # Development only: not imported otherwise.
    from authgate.entrypoints import devidp
    from authgate.entrypoints.devidp.clients import is_dev_provider

    try:
        issuer = development.dev_issuer(config)
    except devidp.ClientSetupError as e:
        print(f"development identity provider: FAILED {e}")
        return None
    return {
        name: issuer
        for name, provider in config.providers.items()
        if is_dev_provider(provider, issuer)
    }


async def _check_security_events(
    config: Config, name: str, providers: dict[str, IdentityProvider]
) -> bool:
    """The RISC receiver's key set, through the transmitter's configuration document."""
    provider = providers[name]
    prefix = f"provider {name} security events: "
    if not isinstance(provider, OAuthIdentityProvider):
        print(f"{prefix}ok (not a network provider)")
        return True
    configured = config.providers[name].risc_configuration
    verifier = provider.security_event_verifier(
        max_age_seconds=config.provider_events.max_age_seconds,
        configuration_url=configured,
    )
    try:
        keys = await verifier.keys.get()
    except KeySetUnavailable as e:
        issuer = config.providers[name].issuer or ""
        url = configured or f"{issuer.rstrip('/')}/.well-known/risc-configuration"
        reason = _failure(e, f"provider {name}: ")
        print(f"{prefix}FAILED {reason} (configuration document {_shown(url)})")
        return False
    print(f"{prefix}ok ({len(keys.keys)} keys)")
    return True


def _check_keys(config: Config) -> bool:
    path = config.session.keys_file
    try:
        keys = list_key_file(path)
    except SessionKeyError as e:
        failure = e
        if not Path(path).exists():
            if config.session.generate_keys:
                print(f"session keys: ok ({path} is created on first start)")
                return True
            failure = missing_key_file(path)  # what serve says: how to make one
        print(f"session keys: FAILED {failure}")
        return False
    session = next(k for k in keys if k.algorithm != "RS256")
    rsa = next((k for k in keys if k.algorithm == "RS256"), None)
    if rsa is None and provider_on(config) and not config.session.generate_keys:
        print(
            f"session keys: FAILED {path} holds no RSA key for the OpenID Provider's tokens "
            "(`authgate keys rotate` adds one)"
        )
        return False
    signing = f"signing with {session.kid}"
    if rsa is not None:
        signing += f", RS256 with {rsa.kid}"
    elif provider_on(config):
        signing += ", an RS256 key is added at start"
    print(f"session keys: ok ({len(keys)} key(s), {signing})")
    return True


async def _check_reached(
    label: str, reach: Callable[[Config], Awaitable[str | None]], config: Config
) -> bool:
    """The database, or Redis (where the rate limits and the revocation channel are kept):
    what was reached (nothing for no Redis), or why not."""
    try:
        reached = await reach(config)
    except StartupError as e:
        print(f"{label}: FAILED {str(e).removeprefix(f'{label}: ')}")
        return False
    if reached is not None:
        print(f"{label}: ok ({reached})")
    return True


async def _check_provider(name: str, provider: IdentityProvider, settings: ProviderConfig) -> bool:
    """Discovery (when the configuration relies on it) and the key set, fetched now."""
    if not isinstance(provider, OAuthIdentityProvider):
        print(f"provider {name}: ok (not a network provider)")
        return True
    prefix = f"provider {name}: "
    parts: list[str] = []
    try:
        endpoints = await provider.endpoints()
    except ProviderUnavailable as e:
        url = (settings.issuer or "").rstrip("/") + WELL_KNOWN
        print(f"{prefix}FAILED {_failure(e, prefix, 'discovery', url)}")
        return False
    parts.append("discovery ok" if provider.discovers else "endpoints configured")
    if endpoints.jwks_uri is None:
        parts.append("no jwks (profile endpoint)")
    else:
        try:
            keys = await provider.key_set.get()
        except KeySetUnavailable as e:
            failure = _failure(e, prefix, "key set", endpoints.jwks_uri)
            print(f"{prefix}{parts[0]}, jwks FAILED {failure}")
            return False
        parts.append(f"jwks ok ({len(keys.keys)} keys)")
    print(prefix + ", ".join(parts))
    return True


def _failure(error: Exception, prefix: str, step: str = "", url: str = "") -> str:
    """The adapter's one-line failure without the provider's name, with the URL fetched after
    the step it names, and the system's reason for a connection that failed: ``discovery at
    http://…/.well-known/openid-configuration: could not be reached (…: connection refused)``."""
    text = str(error).removeprefix(prefix)
    why = _connection_failure(error)
    if why and text.endswith(")"):
        text = f"{text[:-1]}: {why})"
    if step and url and text.startswith(step):
        text = f"{step} at {_shown(url)}: {text[len(step) :].lstrip(' :')}"
    return text


def _connection_failure(error: BaseException) -> str | None:
    """Why a connection failed (``connection refused``), from the client error the adapter's
    own replaced: the adapter keeps its texts short for the logs, a person checking wants it."""
    seen: BaseException | None = error.__context__
    for _ in range(8):  # a short chain: the adapter's error, its fetch error, the client's
        if seen is None:
            return None
        if isinstance(seen, aiohttp.ClientConnectorError):
            os_error = seen.os_error
            if not isinstance(os_error, socket.gaierror) and os_error.errno:
                return os.strerror(os_error.errno).lower()
            return str(os_error.strerror or os_error).lower()
        seen = seen.__context__
    return None


def _shown(url: str) -> str:
    """``url`` as a failure line shows it: without user-info, query or fragment."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unparsable URL)"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# -- clients --------------------------------------------------------------------------------


def _administration(config: Config, resources: Resources) -> ClientAdministration:
    return ClientAdministration(
        units=resources.stores.units,
        clock=resources.shared.clock,
        reserved=reserved_client_ids(config),
    )


def _provider_off_note(config: Config) -> None:
    if not provider_on(config):
        print(
            "authgate: note: the OpenID Provider is off in this configuration (no clients: "
            "and registration.enabled false); stored clients are served once it is on",
            file=sys.stderr,
        )


async def list_clients(config: Config) -> int:
    """``clients list``: one line per client, tab-separated: client_id, origin
    (configuration, operator or registration), type, name. The configuration's first."""

    async def command(resources: Resources, _: SignIn) -> int:
        for client in client_registry(config):
            print(f"{client.client_id}\tconfiguration\t{client.client_type}\t{client.name}")
        for stored in await _administration(config, resources).all():
            c = stored.client()
            print(f"{c.client_id}\t{stored.origin}\t{c.client_type}\t{c.name}")
        return 0

    return await _with_resources(config, "clients list", command)


async def show_client(config: Config, client_id: str) -> int:
    """``clients show``: the client's metadata as JSON (never a secret); 1 when unknown."""

    async def command(resources: Resources, _: SignIn) -> int:
        configured = client_registry(config).get(client_id)
        if configured is not None:
            document: dict[str, Any] = {
                "client_id": client_id,
                "origin": "configuration",
                "client_name": configured.name,
                "client_type": configured.client_type,
                "token_endpoint_auth_method": configured.token_endpoint_auth_method,
                "redirect_uris": list(configured.redirect_uris),
                "grant_types": sorted(configured.grant_types),
                "scope": " ".join(sorted(configured.allowed_scopes)),
            }
        else:
            stored = await _administration(config, resources).get(client_id)
            if stored is None:
                raise NotFound(f"no client {client_id}")
            document = {
                "client_id": client_id,
                "origin": stored.origin,
                "client_type": stored.client().client_type,
                "created_at": _time(stored.created_at),
                "updated_at": _time(stored.updated_at),
                **stored.metadata.document(),
            }
        print(json.dumps(document, indent=2))
        return 0

    return await _with_resources(config, "clients show", command)


async def add_client(config: Config, document: dict[str, Any], client_id: str | None) -> int:
    """``clients add``: keeps the client and prints its client information as JSON, its
    secret (a confidential client's) shown this once. 1 when the metadata is refused or the
    client_id is taken."""
    name = "clients add"

    async def command(resources: Resources, _: SignIn) -> int:
        try:
            added = await _administration(config, resources).add(document, client_id)
        except InvalidClientMetadata as e:
            return _fail(name, f"{e.error}: {e.description}", 1)
        except ClientIdTaken as e:
            return _fail(name, str(e), 1)
        shown: dict[str, Any] = {"client_id": added.client.client_id}
        if added.secret is not None:
            shown["client_secret"] = added.secret
        print(json.dumps({**shown, **added.client.metadata.document()}, indent=2))
        if added.secret is not None:
            print("authgate: the client secret is shown this once; keep it now", file=sys.stderr)
        _provider_off_note(config)
        return 0

    return await _with_resources(config, name, command)


async def remove_client(config: Config, client_id: str) -> int:
    """``clients remove``: the stored client goes, its token families are revoked and its
    grants removed in one unit of work. 1 for a client of the configuration or none."""
    name = "clients remove"

    async def command(resources: Resources, _: SignIn) -> int:
        if client_id in config.clients:
            return _fail(
                name,
                f"{client_id} is a client of the configuration (read-only); remove it from "
                "the file",
                1,
            )
        revoked = await _administration(config, resources).remove(client_id)
        if revoked is None:
            raise NotFound(f"no stored client {client_id}")
        print(f"authgate: removed client {client_id} ({len(revoked)} token family(ies) revoked)")
        return 0

    return await _with_resources(config, name, command)


async def new_initial_token(config: Config, expires_in: dt.timedelta | None) -> int:
    """``clients token``: a new initial access token for one registration, printed alone on
    standard output (its expiry on standard error)."""

    async def command(resources: Resources, _: SignIn) -> int:
        lifetime = expires_in or dt.timedelta(seconds=config.registration.initial_token_seconds)
        token, kept = await _administration(config, resources).initial_token(lifetime)
        print(token)
        print(
            f"authgate: good for one registration until {_time(kept.expires_at)}",
            file=sys.stderr,
        )
        if not config.registration.enabled:
            print("authgate: note: registration.enabled is false", file=sys.stderr)
        return 0

    return await _with_resources(config, "clients token", command)
