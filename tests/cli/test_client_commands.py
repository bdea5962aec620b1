"""``authgate clients list|show|add|remove|token``, run as an operator runs them (the command in
a process of its own) on SQLite and the real PostgreSQL: the configuration's clients listed
read-only beside the stored ones, a secret printed once and kept as a digest, a removal that
revokes the client's token families and grants, and initial access tokens."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from authgate.domain.model import SessionRecord
from authgate.domain.openid.records import Grant, TokenFamily, token_digest
from tests.cli.test_operator_commands import KINDS, authgate, run, write_config
from tests.support.records import verified
from tests.support.stores import Store, open_store

CONFIGURED: dict[str, Any] = {
    "web": {
        "name": "Configured web",
        "type": "confidential",
        "secrets": ["s" * 40],
        "redirect_uris": ["https://web.example.com/cb"],
    }
}
OVERRIDES: dict[str, Any] = {
    "rest": {"port": 8080, "public_url": "https://auth.example.com"},
    "clients": CONFIGURED,
}


class Setup:
    def __init__(self, config: str, store: Store) -> None:
        self.config = config
        self.store = store

    async def clients(self, *args: str) -> Any:
        return await run("clients", *args, "--config", self.config)


@pytest.fixture(params=KINDS)
async def setup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Setup]:
    if request.param == "postgres":
        url = request.getfixturevalue("empty_postgres_url")
        config = write_config(tmp_path, {**OVERRIDES, "database": {"url": url}})
        migrated = await asyncio.to_thread(authgate, "migrate", "--config", config)
        assert migrated.returncode == 0, migrated.stderr
        store = await open_store("postgres", postgres_url=url)
    else:
        path = tmp_path / "authgate.db"
        config = write_config(tmp_path, {**OVERRIDES, "database": {"url": f"sqlite:///{path}"}})
        store = await open_store("sqlite", sqlite_path=path)
    try:
        yield Setup(config, store)
    finally:
        await store.close()


async def test_add_from_options_then_list_show_and_remove(setup: Setup) -> None:
    added = await setup.clients(
        "add",
        "--name",
        "Desk agent",
        "--public",
        "--redirect-uri",
        "http://127.0.0.1/callback",
        "--grant-type",
        "authorization_code",
        "--grant-type",
        "refresh_token",
        "--client-id",
        "desk-agent",
    )
    assert added.returncode == 0, added.stderr
    document = json.loads(added.stdout)
    assert document["client_id"] == "desk-agent"
    assert document["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in document

    listed = await setup.clients("list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "web\tconfiguration\tconfidential\tConfigured web",
        "desk-agent\toperator\tpublic\tDesk agent",
    ]
    shown = json.loads((await setup.clients("show", "desk-agent")).stdout)
    assert shown["origin"] == "operator" and shown["client_type"] == "public"
    assert shown["redirect_uris"] == ["http://127.0.0.1/callback"]
    assert shown["created_at"].endswith("Z")
    configured = json.loads((await setup.clients("show", "web")).stdout)
    assert configured["origin"] == "configuration" and "secrets" not in configured

    removed = await setup.clients("remove", "desk-agent")
    assert removed.returncode == 0, removed.stderr
    assert (await setup.clients("list")).stdout.splitlines() == [
        "web\tconfiguration\tconfidential\tConfigured web"
    ]
    missing = await setup.clients("show", "desk-agent")
    assert missing.returncode == 1 and "no client desk-agent" in missing.stderr


async def test_add_from_a_file_prints_the_secret_once_and_keeps_its_digest(
    setup: Setup, tmp_path: Path
) -> None:
    metadata = tmp_path / "client.json"
    metadata.write_text(
        json.dumps(
            {
                "client_name": "Billing",
                "redirect_uris": ["https://billing.example.com/cb"],
                "grant_types": ["authorization_code", "client_credentials"],
                "backchannel_logout_uri": "https://billing.example.com/logout",
            }
        )
    )
    added = await setup.clients("add", "--file", str(metadata))
    assert added.returncode == 0, added.stderr
    document = json.loads(added.stdout)
    secret = document["client_secret"]
    assert len(secret) >= 32 and "shown this once" in added.stderr
    async with setup.store.units.read() as tx:
        stored = await tx.stored_clients.get(document["client_id"])
    assert stored is not None and stored.registration_token_hash is None
    assert stored.client().secret_matches(secret)
    assert stored.client().backchannel_logout_uri == "https://billing.example.com/logout"
    shown = await setup.clients("show", document["client_id"])
    assert secret not in shown.stdout

    yaml_file = tmp_path / "client.yaml"
    yaml_file.write_text("client_name: From YAML\nredirect_uris: [https://y.example/cb]\n")
    assert (await setup.clients("add", "--file", str(yaml_file))).returncode == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--name", "x", "--redirect-uri", "http://example.com/cb"), "invalid_redirect_uri"),
        (("--name", "x", "--client-id", "web", "--redirect-uri", "https://x.example/cb"), "web"),
        (
            ("--name", "x", "--grant-type", "password", "--redirect-uri", "https://a.example/cb"),
            "password",
        ),
    ],
)
async def test_add_refuses_what_the_provider_cannot_serve(
    setup: Setup, args: tuple[str, ...], words: str
) -> None:
    refused = await setup.clients("add", *args)
    assert refused.returncode == 1
    assert refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("authgate: clients add: ") and words in line


async def test_removing_a_client_revokes_its_families_and_grants(setup: Setup) -> None:
    added = await setup.clients("add", "--name", "Gone", "--redirect-uri", "https://g.example/cb")
    client_id = json.loads(added.stdout)["client_id"]
    now = dt.datetime.now(dt.UTC)
    account, _ = await setup.store.accounts.create_with_identity(
        verified("google", "g-1", email="a@example.com"), now
    )
    await setup.store.sessions.add(
        SessionRecord(
            id="s-1",
            account_id=account.id,
            provider="google",
            created_at=now,
            expires_at=now + dt.timedelta(hours=1),
            absolute_expires_at=now + dt.timedelta(days=1),
            auth_time=now,
        )
    )
    async with setup.store.units.begin() as tx:
        for owner in (client_id, "web"):
            await tx.refresh_tokens.start_family(
                TokenFamily(
                    f"family-{owner}", owner, account.id, "s-1", now, now + dt.timedelta(days=1)
                )
            )
            await tx.grants.put(Grant(account.id, owner, frozenset({"openid"}), now))

    configured = await setup.clients("remove", "web")
    assert configured.returncode == 1 and "read-only" in configured.stderr
    removed = await setup.clients("remove", client_id)
    assert removed.returncode == 0, removed.stderr
    assert "1 token family(ies) revoked" in removed.stdout
    async with setup.store.units.read() as tx:
        assert not await tx.refresh_tokens.is_family_live(f"family-{client_id}", now)
        assert await tx.refresh_tokens.is_family_live("family-web", now)
        assert await tx.grants.get(account.id, client_id) is None
        assert await tx.grants.get(account.id, "web") is not None
    again = await setup.clients("remove", client_id)
    assert again.returncode == 1 and "no stored client" in again.stderr


async def test_token_prints_an_initial_access_token_good_once_until_it_expires(
    setup: Setup,
) -> None:
    made = await setup.clients("token", "--expires-in", "30m")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert len(token) >= 32 and "\n" not in token
    assert "one registration" in made.stderr
    now = dt.datetime.now(dt.UTC)
    async with setup.store.units.begin() as tx:
        assert await tx.stored_clients.spend_initial_token(token_digest(token), now)
    async with setup.store.units.begin() as tx:
        assert not await tx.stored_clients.spend_initial_token(token_digest(token), now)
    # Another, presented after its 30 minutes: expired.
    later = (await setup.clients("token", "--expires-in", "1800")).stdout.strip()
    async with setup.store.units.begin() as tx:
        assert not await tx.stored_clients.spend_initial_token(
            token_digest(later), now + dt.timedelta(minutes=31)
        )
    bad = await setup.clients("token", "--expires-in", "soon")
    assert bad.returncode == 2 and "30m" in bad.stderr
