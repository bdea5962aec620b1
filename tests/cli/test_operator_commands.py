"""The operator's commands (`authgate accounts|sessions|keys|config ...`), run as an operator
runs them: the installed command in a process of its own, on the configured database (SQLite
and the real PostgreSQL) and key file."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from authgate.adapters.jose import JwtSessionTokens, load_or_create_keys
from authgate.domain.model import Account, Outcome, SessionRecord
from authgate.domain.passkeys import Passkey
from tests.app.conftest import base_config, merge
from tests.fakeidp import FakeIdP
from tests.support.records import verified
from tests.support.stores import Store, open_store

KINDS = ("sqlite", "postgres")


ROOT = Path(__file__).resolve().parents[2]


def authgate(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "authgate.entrypoints.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


async def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command, off the event loop (a fake provider of the test may have to answer it)."""
    return await asyncio.to_thread(authgate, *args)


def write_config(tmp_path: Path, overrides: dict[str, Any]) -> str:
    path = tmp_path / "authgate.yaml"
    path.write_text(yaml.safe_dump(merge(base_config(tmp_path), overrides), sort_keys=False))
    return str(path)


class Setup:
    """A configuration on one database, and that database opened by the test."""

    def __init__(self, config: str, store: Store) -> None:
        self.config = config
        self.store = store

    async def sign_in(self, subject: str, email: str, sessions: int = 2) -> Account:
        """What a sign-in leaves: an account, its identity and live sessions."""
        now = dt.datetime.now(dt.UTC)
        account, _ = await self.store.accounts.create_with_identity(
            verified("google", subject, email=email, name="Ann Example"), now
        )
        await self.store.accounts.record_login(account.id, now)
        for i in range(sessions):
            await self.store.sessions.add(
                SessionRecord(
                    id=f"{subject}-session-{i}",
                    account_id=account.id,
                    provider="google",
                    created_at=now,
                    expires_at=now + dt.timedelta(hours=1),
                    absolute_expires_at=now + dt.timedelta(days=30),
                    auth_time=now,
                )
            )
        stored = await self.store.accounts.get(account.id)
        assert stored is not None
        return stored


@pytest.fixture(params=KINDS)
async def setup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Setup]:
    if request.param == "postgres":
        url = request.getfixturevalue("empty_postgres_url")
        migrated = await asyncio.to_thread(
            authgate, "migrate", "--config", write_config(tmp_path, {"database": {"url": url}})
        )
        assert migrated.returncode == 0, migrated.stderr
        store = await open_store("postgres", postgres_url=url)
    else:
        path = tmp_path / "authgate.db"
        url = f"sqlite:///{path}"
        store = await open_store("sqlite", sqlite_path=path)
    try:
        yield Setup(write_config(tmp_path, {"database": {"url": url}}), store)
    finally:
        await store.close()


# -- accounts show --------------------------------------------------------------------------


async def test_show_finds_an_account_by_id_identity_and_email(setup: Setup) -> None:
    account = await setup.sign_in("g-ann", "Ann@Example.com")
    await setup.sign_in("g-bob", "bob@example.com", sessions=0)

    shown = []
    # The API's providerId names it as well as the shorter PROVIDER:SUBJECT.
    for ref in (account.id, "user:google:g-ann", "google:g-ann", "ann@example.com"):
        result = await run("accounts", "show", ref, "--config", setup.config)
        assert result.returncode == 0, result.stderr
        shown.append(json.loads(result.stdout))
    assert shown[0] == shown[1] == shown[2] == shown[3]
    document = shown[0]
    assert document["id"] == account.id
    assert document["email"] == "Ann@Example.com"
    assert document["emailVerified"] is True
    assert document["name"] == "Ann Example"
    assert document["createdAt"].endswith("Z")
    assert document["lastSignInAt"] is not None
    assert document["liveSessions"] == 2
    [provider] = document["providers"]
    assert provider["provider"] == "google"
    assert provider["providerId"] == "user:google:g-ann"  # as GET /v1/account/providers says
    assert provider["isPrimary"] is True
    assert (provider["disabledReason"], provider["emailDisabled"]) == (None, False)
    assert document["passkeys"] == []


async def test_show_lists_the_passkeys_and_delete_removes_them(setup: Setup) -> None:
    account = await setup.sign_in("g-pk", "pk@example.com")
    now = dt.datetime.now(dt.UTC)
    passkey = Passkey(
        id="0" * 32,
        account_id=account.id,
        credential_id=b"c" * 32,
        public_key=b"k" * 77,
        sign_count=3,
        transports=("internal",),
        aaguid="00000000-0000-0000-0000-000000000000",
        backup_eligible=True,
        backed_up=True,
        name="Laptop",
        created_at=now,
    )
    await setup.store.passkeys.add(passkey)
    shown = await run("accounts", "show", account.id, "--config", setup.config)
    [listed] = json.loads(shown.stdout)["passkeys"]
    assert (listed["id"], listed["name"], listed["backedUp"], listed["signCount"]) == (
        "0" * 32,
        "Laptop",
        True,
        3,
    )
    assert "publicKey" not in listed and "credentialId" not in listed
    deleted = await run("accounts", "delete", account.id, "--config", setup.config)
    assert deleted.returncode == 0, deleted.stderr
    assert await setup.store.passkeys.find_by_credential(b"c" * 32) is None


@pytest.mark.parametrize(
    "ref",
    [
        "00000000-0000-4000-8000-000000000000",
        "google:nobody",
        "user:google:nobody",
        "nobody@example.com",
    ],
)
async def test_show_of_nothing_exits_1_in_one_line(setup: Setup, ref: str) -> None:
    result = await run("accounts", "show", ref, "--config", setup.config)
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("authgate: accounts show: no account")


async def test_show_by_an_email_of_several_accounts_names_them_and_exits_1(
    setup: Setup,
) -> None:
    first = await setup.sign_in("g-1", "shared@example.com")
    second = await setup.sign_in("g-2", "shared@example.com")
    result = await run("accounts", "show", "shared@example.com", "--config", setup.config)
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert "2 accounts have the email shared@example.com" in line
    assert first.id in line and second.id in line


# -- accounts delete, sessions revoke -------------------------------------------------------


async def test_delete_removes_the_account_and_ends_its_sessions(setup: Setup) -> None:
    account = await setup.sign_in("g-del", "del@example.com")
    other = await setup.sign_in("g-keep", "keep@example.com")

    result = await run("accounts", "delete", account.id, "--config", setup.config)
    assert result.returncode == 0, result.stderr
    assert f"deleted account {account.id} (2 session(s) ended)" in result.stdout

    now = dt.datetime.now(dt.UTC)
    assert await setup.store.accounts.get(account.id) is None
    assert await setup.store.accounts.find_by_identity(verified("google", "g-del").identity) is None
    for i in range(2):
        assert not await setup.store.sessions.is_live(f"g-del-session-{i}", now)
    # Another account is untouched.
    assert await setup.store.accounts.get(other.id) == other
    assert await setup.store.sessions.is_live("g-keep-session-0", now)
    # Audited like the user's own deletion, naming the operator's command.
    [deleted] = [
        e
        for e in await setup.store.events.for_account(account.id)
        if e.outcome is Outcome.ACCOUNT_DELETED
    ]
    assert (deleted.provider, deleted.user_agent) == ("operator", "authgate accounts delete")

    again = await run("accounts", "delete", account.id, "--config", setup.config)
    assert again.returncode == 1
    assert again.stderr.strip() == f"authgate: accounts delete: no account {account.id}"


async def test_sessions_revoke_ends_every_live_session_of_the_account(setup: Setup) -> None:
    account = await setup.sign_in("g-rev", "rev@example.com", sessions=3)
    other = await setup.sign_in("g-other", "other@example.com", sessions=1)

    result = await run("sessions", "revoke", "--account", account.id, "--config", setup.config)
    assert result.returncode == 0, result.stderr
    assert f"ended 3 session(s) of account {account.id}" in result.stdout

    now = dt.datetime.now(dt.UTC)
    assert await setup.store.sessions.live_for_account(account.id, now) == []
    assert len(await setup.store.sessions.live_for_account(other.id, now)) == 1
    assert await setup.store.accounts.get(account.id) == account  # the account stays
    outcomes = [e.outcome for e in await setup.store.events.for_account(account.id)]
    assert Outcome.SIGNED_OUT_EVERYWHERE in outcomes

    unknown = "00000000-0000-4000-8000-000000000000"
    result = await run("sessions", "revoke", "--account", unknown, "--config", setup.config)
    assert result.returncode == 1
    assert result.stderr.strip() == f"authgate: sessions revoke: no account {unknown}"


async def test_every_command_that_takes_an_account_takes_its_provider_id(setup: Setup) -> None:
    """The identifier the API and the demo show (providerId) names the account to each
    command; a subject holding colons stays whole."""
    revoked = await setup.sign_in("g:with:colons", "rev2@example.com", sessions=2)
    result = await run(
        "sessions", "revoke", "--account", "user:google:g:with:colons", "--config", setup.config
    )
    assert result.returncode == 0, result.stderr
    assert f"ended 2 session(s) of account {revoked.id}" in result.stdout

    deleted = await setup.sign_in("g-gone", "gone@example.com", sessions=1)
    result = await run("accounts", "delete", "user:google:g-gone", "--config", setup.config)
    assert result.returncode == 0, result.stderr
    assert f"deleted account {deleted.id} (1 session(s) ended)" in result.stdout
    assert await setup.store.accounts.get(deleted.id) is None
    assert await setup.store.accounts.get(revoked.id) == revoked

    again = await run("accounts", "delete", "user:google:g-gone", "--config", setup.config)
    assert again.returncode == 1
    assert again.stderr.strip() == (
        "authgate: accounts delete: no account holds the identity user:google:g-gone"
    )


# -- keys rotate ----------------------------------------------------------------------------


def key_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.json"


def stored_keys(path: Path) -> list[dict[str, Any]]:
    keys: list[dict[str, Any]] = json.loads(path.read_text())["keys"]
    return keys


def tokens(path: Path) -> JwtSessionTokens:
    return JwtSessionTokens(
        load_or_create_keys(path, create=True),
        issuer="authgate",
        audience="authgate",
        ttl=dt.timedelta(hours=1),
    )


def test_rotate_puts_a_new_key_first_and_old_tokens_still_verify(tmp_path: Path) -> None:
    path = key_file(tmp_path)
    config = write_config(tmp_path, {})
    now = dt.datetime.now(dt.UTC)
    before = tokens(path)  # the service's first start creates the file
    [old] = stored_keys(path)
    issued = before.issue("account-1", "google", now)

    result = authgate("keys", "rotate", "--config", config)
    assert result.returncode == 0, result.stderr

    new, kept = stored_keys(path)
    assert kept == old  # every member kept, the private part included
    assert new["kid"] != old["kid"] and "d" in new
    assert abs(new["created"] - now.timestamp()) < 60
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".keys.json")]  # no temp left

    after = tokens(path)
    assert after.verify(issued.token, now).account_id == "account-1"
    signed = after.issue("account-2", "google", now)
    header = json.loads(_b64(signed.token.split(".")[0]))
    assert header["kid"] == new["kid"]
    # The published key set carries both keys and nothing but JWK members.
    published = after.public_jwks()["keys"]
    assert [k["kid"] for k in published] == [new["kid"], old["kid"]]
    assert all("created" not in k and "d" not in k for k in published)


def test_prune_removes_the_keys_retired_longer_than_the_session_limit(tmp_path: Path) -> None:
    path = key_file(tmp_path)
    config = write_config(tmp_path, {"session": {"absolute_max_seconds": 86400}})
    tokens(path)
    assert authgate("keys", "rotate", "--config", config).returncode == 0
    second, first = stored_keys(path)
    # The second key was added (so the first stopped signing) two days ago.
    second["created"] -= 2 * 86400
    path.write_text(json.dumps({"keys": [second, first]}))
    path.chmod(0o600)

    result = authgate("keys", "prune", "--config", config)
    assert result.returncode == 0, result.stderr
    assert f"removed session key {first['kid']}" in result.stdout
    # Pruning adds no key: the signing key stays the one that signs.
    assert stored_keys(path) == [second]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    assert authgate("keys", "rotate", "--config", config).returncode == 0
    third, kept = stored_keys(path)
    # The second key stopped signing just now: it stays, whatever its own age.
    result = authgate("keys", "prune", "--config", config)
    assert result.returncode == 0, result.stderr
    assert "nothing removed" in result.stdout
    assert stored_keys(path) == [third, kept] and kept == second


def test_rotate_removes_nothing_and_prune_alone_removes(tmp_path: Path) -> None:
    """Each verb does one thing: rotating adds a key whatever the ages of the others, and
    ``--prune`` is no longer a way of also removing (an unknown option, exit 2, no change)."""
    path = key_file(tmp_path)
    config = write_config(tmp_path, {"session": {"absolute_max_seconds": 86400}})
    tokens(path)
    assert authgate("keys", "rotate", "--config", config).returncode == 0
    second, first = stored_keys(path)
    second["created"] -= 2 * 86400
    path.write_text(json.dumps({"keys": [second, first]}))
    path.chmod(0o600)

    assert authgate("keys", "rotate", "--config", config).returncode == 0
    assert [k["kid"] for k in stored_keys(path)][1:] == [second["kid"], first["kid"]]
    before = path.read_text()
    refused = authgate("keys", "rotate", "--prune", "--config", config)
    assert refused.returncode == 2
    assert "unrecognized arguments: --prune" in refused.stderr
    assert path.read_text() == before


def test_prune_keeps_a_key_whose_retirement_time_is_unknown(tmp_path: Path) -> None:
    path = key_file(tmp_path)
    config = write_config(tmp_path, {"session": {"absolute_max_seconds": 86400}})
    tokens(path)
    assert authgate("keys", "rotate", "--config", config).returncode == 0
    second, first = stored_keys(path)
    del second["created"]  # a key written by hand, say
    path.write_text(json.dumps({"keys": [second, first]}))
    path.chmod(0o600)

    assert authgate("keys", "prune", "--config", config).returncode == 0
    assert [k["kid"] for k in stored_keys(path)] == [second["kid"], first["kid"]]


@pytest.mark.parametrize("verb", ["rotate", "prune"])
def test_rotate_or_prune_without_a_key_file_fails_in_one_line(tmp_path: Path, verb: str) -> None:
    result = authgate("keys", verb, "--config", write_config(tmp_path, {}))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"authgate: keys {verb}: session key file")
    assert not key_file(tmp_path).exists()


def _b64(part: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


CLIENTS = {
    "clients": {
        "web": {
            "name": "Web",
            "type": "confidential",
            "secrets": ["a-client-secret-of-forty-characters-long"],
            "redirect_uris": ["https://app.example.com/cb"],
        }
    }
}


def test_with_clients_rotate_adds_an_rsa_key_and_prune_retires_each_kind_apart(
    tmp_path: Path,
) -> None:
    path = key_file(tmp_path)
    config = write_config(tmp_path, {**CLIENTS, "session": {"absolute_max_seconds": 86400}})
    tokens(path)  # a key file of the time before clients: a session key alone
    [first] = stored_keys(path)

    result = authgate("keys", "rotate", "--config", config)
    assert result.returncode == 0, result.stderr
    session, rsa, kept = stored_keys(path)
    assert kept == first and session["kty"] == "EC" and rsa["kty"] == "RSA"
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        f"authgate: added session key {session['kid']}; it signs once the service restarts",
        f"authgate: added RS256 key (ID and access tokens) {rsa['kid']}; it signs once the "
        "service restarts",
    ]
    assert len({session["kid"], rsa["kid"], first["kid"]}) == 3

    # The next rotation adds one of each kind; the RSA key before it stopped signing when the
    # new RSA key was added, whatever the session keys did.
    assert authgate("keys", "rotate", "--config", config).returncode == 0
    keys = stored_keys(path)
    assert [k["kty"] for k in keys] == ["EC", "RSA", "EC", "RSA", "EC"]
    keys[1]["created"] -= 2 * 86400
    path.write_text(json.dumps({"keys": keys}))
    path.chmod(0o600)
    result = authgate("keys", "prune", "--config", config)
    assert result.returncode == 0, result.stderr
    assert f"authgate: removed RS256 key {rsa['kid']}" in result.stdout.splitlines()
    assert [k["kid"] for k in stored_keys(path)] == [
        k["kid"] for k in keys if k["kid"] != rsa["kid"]
    ]


def test_a_file_with_an_rsa_key_keeps_rotating_it_without_clients(tmp_path: Path) -> None:
    path = key_file(tmp_path)
    load_or_create_keys(path, create=True, rsa=True)
    assert authgate("keys", "rotate", "--config", write_config(tmp_path, {})).returncode == 0
    assert [k["kty"] for k in stored_keys(path)] == ["EC", "RSA", "EC", "RSA"]


def test_config_check_names_the_missing_rsa_key_of_the_provider(tmp_path: Path) -> None:
    path = key_file(tmp_path)
    tokens(path)
    [session] = stored_keys(path)
    config = write_config(tmp_path, {**CLIENTS, "session": {"generate_keys": False}})
    result = authgate("config", "check", "--config", config)
    assert result.returncode == 1
    assert f"session keys: FAILED {path} holds no RSA key for the OpenID Provider's tokens " in (
        result.stdout
    )
    load_or_create_keys(path, create=True, rsa=True)
    [_, rsa] = stored_keys(path)
    result = authgate("config", "check", "--config", config)
    assert (
        f"session keys: ok (2 key(s), signing with {session['kid']}, RS256 with {rsa['kid']})"
        in result.stdout.splitlines()
    ), result.stdout


# -- config check ---------------------------------------------------------------------------


async def test_config_check_passes_with_every_provider_reachable(
    tmp_path: Path, clean_postgres_url: str
) -> None:
    async with FakeIdP() as idp:
        providers = {p: idp.config(p) for p in ("google", "facebook", "apple")}
        config = write_config(
            tmp_path, {"database": {"url": clean_postgres_url}, "providers": providers}
        )
        result = await run("config", "check", "--config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "config: ok"
    assert lines[1] == f"session keys: ok ({key_file(tmp_path)} is created on first start)"
    assert lines[2].startswith("database: ok (postgresql://")
    assert lines[3].startswith("provider google: discovery ok, jwks ok (")
    assert lines[4] == "provider facebook: endpoints configured, no jwks (profile endpoint)"
    assert lines[5].startswith("provider apple: discovery ok, jwks ok (")
    assert lines[6] == (
        "provider tokens: none kept (provider_tokens.keys is empty; nothing is revoked)"
    )
    assert len(lines) == 7
    assert not key_file(tmp_path).exists()  # a check creates nothing


async def test_config_check_fetches_the_keys_of_security_events(tmp_path: Path) -> None:
    async with FakeIdP() as idp:
        google = idp.config("google") | {"notifications": True}
        config = write_config(tmp_path, {"providers": {"google": google}})
        result = await run("config", "check", "--config", config)
        assert result.returncode == 0, result.stdout + result.stderr
        assert (
            result.stdout.strip()
            .splitlines()[-1]
            .startswith("provider google security events: ok (")
        )
        idp.google.jwks_down = True
        failed = await run("config", "check", "--config", config)
    assert failed.returncode == 1
    assert "provider google security events: FAILED" in failed.stdout


async def test_config_check_names_an_unreachable_provider_and_database(tmp_path: Path) -> None:
    async with FakeIdP() as idp:
        google = idp.config("google")
    # The fake has stopped: its port answers nothing now.
    config = write_config(
        tmp_path,
        {
            "database": {"url": "postgresql://authgate:s3cret@127.0.0.1:1/authgate"},
            "providers": {"google": {**google, "timeout_seconds": 2}},
        },
    )
    result = await run("config", "check", "--config", config)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "config: ok"
    assert lines[2].startswith("database: FAILED cannot connect to PostgreSQL")
    # The URL fetched, and why it failed, as the system said it.
    discovery = f"{google['issuer']}/.well-known/openid-configuration"
    assert lines[3] == (
        f"provider google: FAILED discovery at {discovery}: could not be reached "
        "(ClientConnectorError: connection refused)"
    )
    assert "s3cret" not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


async def test_config_check_names_the_key_set_that_failed(tmp_path: Path) -> None:
    async with FakeIdP() as idp:
        google = idp.config("google")
        idp.google.jwks_down = True
        config = write_config(tmp_path, {"providers": {"google": google}})
        result = await run("config", "check", "--config", config)
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = [x for x in result.stdout.splitlines() if x.startswith("provider google")]
    assert line == (
        f"provider google: discovery ok, jwks FAILED key set at {idp.google.jwks_uri}: "
        "answered HTTP 500"
    )


def test_config_check_of_the_default_configuration_passes_before_the_service_runs(
    tmp_path: Path,
) -> None:
    """The configuration `scripts/run` uses, on a fresh clone, with nothing started yet: the
    providers that the development identity provider serves are the service's own."""
    result = authgate(
        "config",
        "check",
        "--config",
        str(ROOT / "config.default.yaml"),
        cwd=tmp_path,
        env={"PORT": "8080"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert "database: ok (sqlite:///./var/authgate.db)" in lines
    for name in ("google", "facebook", "apple"):
        assert (
            f"provider {name}: served by this service (development identity provider at "
            "http://localhost:8080/dev/idp)"
        ) in lines
    assert not [line for line in lines if "FAILED" in line]
    assert result.stderr == ""


def test_config_check_of_an_unusable_configuration_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rest: {port: 0}\n")
    result = authgate("config", "check", "--config", str(path))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "configuration error" in result.stderr
