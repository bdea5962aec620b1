"""The audit line of a sign-in, as `authgate serve` writes it to stderr.

The audit service only logs its record; the service's log handler writes it, in its place
among the access lines, with the control characters of a user agent chosen by the client
replaced; and a SIGTERM right after the sign-in loses none of its lines. A passkey sign-in
writes its audit line and no line of the WebAuthn library's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp

from bench.harness import ServiceProcess, SignInDriver, service_config, write_config
from bench.passkeys_bench import add_passkey, passkey_sign_in, passkeys_config
from tests.fakeidp import FakeIdP, FakeUser
from tests.support.webauthn import SoftAuthenticator

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"


async def test_a_sign_ins_audit_line_is_what_logging_writes(
    tmp_path: Path, fake_idp: FakeIdP
) -> None:
    config = write_config(tmp_path, service_config(tmp_path, fake_idp))
    agent = "Tester/1.0\t\x85'quoted'"  # (aiohttp's client itself refuses CR, LF, ESC)
    async with ServiceProcess(config) as service, SignInDriver(fake_idp) as driver:
        done = await driver.complete(
            service.url,
            user=FakeUser(sub="audited"),
            intent="register",
            headers={"User-Agent": agent},
        )
        assert done.signed_in, done
        # SIGTERM at once: the lines of the sign-in may still be queued.
        assert await service.stop() == 0
    log = service.log()
    lines = [line for line in log.splitlines() if " authgate.audit " in line]
    assert len(lines) == 1, log
    expected = (
        rf"{STAMP} INFO authgate\.audit sign-in event: provider=google outcome=registered "
        r"client=127\.0\.0\.1 "
        + re.escape("user_agent=\"Tester/1.0\ufffd\ufffd'quoted'\"")
        + r" account=[0-9a-f-]{36}"
    )
    assert re.fullmatch(expected, lines[0]), lines[0]
    # In order: after the initiation's access line, before the callback's.
    order = [
        line.split(" ", 4)[3]
        for line in log.splitlines()
        if " authgate.access " in line or " authgate.audit " in line
    ]
    assert order[-3:] == ["authgate.access", "authgate.audit", "authgate.access"], log


async def test_a_passkey_sign_in_writes_its_audit_line_and_not_the_librarys(
    tmp_path: Path, fake_idp: FakeIdP, clean_postgres_url: str
) -> None:
    config = write_config(tmp_path, passkeys_config(tmp_path, fake_idp, clean_postgres_url))
    async with (
        ServiceProcess(config) as service,
        SignInDriver(fake_idp) as driver,
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
    ):
        done = await driver.complete(service.url, user=FakeUser(sub="keyed"), intent="register")
        assert done.session is not None, done
        authenticator = SoftAuthenticator()
        await add_passkey(http, service.url, done.session, authenticator)
        assert await passkey_sign_in(http, service.url, authenticator)
        assert await service.stop() == 0
    log = service.log()
    audit = [line for line in log.splitlines() if " authgate.audit " in line]
    assert any("provider=passkey outcome=signed_in" in line for line in audit), log
    assert " fido2" not in log, log
    credential_id = next(iter(authenticator.credentials)).hex()
    assert credential_id not in log, log
