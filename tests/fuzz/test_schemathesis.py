"""Schemathesis against the running service's own ``/openapi.json``.

A real ``authgate serve`` on a free loopback port, on the run's migrated PostgreSQL database,
configured with the fake identity provider's three providers. Schemathesis (its CLI, in a
subprocess) runs every phase with its default checks and a fixed seed; the run must end with
zero failures: no 5xx, every status and body documented, every response matching its schema.

The bearer-protected operations get a valid session token from the auth hook
(``tests/fuzz/hooks.py``), minted from the service's key file for an account that a real
sign-in registered first.

``AUTHGATE_FUZZ_EXAMPLES`` sets ``--max-examples`` (CI: 60; ``scripts/prove``: more).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path

from bench.harness import (
    ROOT,
    SESSION_AUDIENCE,
    SESSION_ISSUER,
    ServiceProcess,
    SignInDriver,
    service_config,
    write_config,
)
from tests.fakeidp import FakeIdP, FakeUser

HERE = Path(__file__).parent
SEED = 20240605
EXAMPLES = int(os.environ.get("AUTHGATE_FUZZ_EXAMPLES", "60"))
CHECKS = os.environ.get("AUTHGATE_FUZZ_CHECKS", "")  # e.g. "all"; default: schemathesis' own
RUN_TIMEOUT = float(os.environ.get("AUTHGATE_FUZZ_TIMEOUT", "600"))


def jwt_subject(token: str) -> str:
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


async def test_schemathesis_finds_nothing(
    tmp_path: Path, fake_idp: FakeIdP, postgres_url: str
) -> None:
    config = service_config(
        tmp_path,
        fake_idp,
        database_url=postgres_url,
        overrides={
            # Many callbacks and starts per minute from one address: the fuzzer must get past
            # the limiters to reach the code behind them (the limits are proven in tests/app
            # and tests/scaleout).
            "ratelimit": {
                "callback": "100000/minute",
                "initiation": "100000/minute",
                "passkeys": "100000/minute",
            },
            "providers": {"google": {"timeout_seconds": 5}},
            # The passkey operations too (their ceremonies are proven in tests/app).
            "passkeys": {"enabled": True, "rp_id": "127.0.0.1", "origins": ["http://127.0.0.1"]},
        },
    )
    config_file = write_config(tmp_path, config)
    async with ServiceProcess(config_file) as service, SignInDriver(fake_idp) as driver:
        registered = await driver.complete(
            service.url, "google", user=FakeUser(sub="fuzz-account"), intent="register"
        )
        assert registered.signed_in, registered
        assert registered.session is not None
        report = tmp_path / "junit.xml"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SCHEMATHESIS_HOOKS": "tests.fuzz.hooks",
            "AUTHGATE_FUZZ_KEYS_FILE": config["session"]["keys_file"],
            "AUTHGATE_FUZZ_ACCOUNT": jwt_subject(registered.session),
            "AUTHGATE_FUZZ_DATABASE_URL": config["database"]["url"],
            "AUTHGATE_FUZZ_ISSUER": SESSION_ISSUER,
            "AUTHGATE_FUZZ_AUDIENCE": SESSION_AUDIENCE,
            "NO_COLOR": "1",
        }
        command = [
            str(Path(sys.executable).parent / "st"),
            "--config-file",
            str(HERE / "schemathesis.toml"),
            "run",
            f"{service.url}/openapi.json",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--seed",
            str(SEED),
            "--max-examples",
            str(EXAMPLES),
            "--workers",
            "2",
            "--request-timeout",
            "15",
            "--max-redirects",
            "0",
            "--report",
            "junit",
            "--report-junit-path",
            str(report),
        ]
        if CHECKS:
            command += ["--checks", CHECKS]
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            async with asyncio.timeout(RUN_TIMEOUT):
                out, _ = await proc.communicate()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        output = out.decode(errors="replace")
        (tmp_path / "schemathesis.txt").write_text(output)
        assert service.running(), f"the service died:\n{service.log()[-3000:]}"
        assert proc.returncode == 0, output[-20000:]
        # No unexpected error of the service's own (aiohttp.server logs the malformed requests
        # it refuses by itself, such as schemathesis' NUL-byte header probe: not ours).
        errors = [line for line in service.log().splitlines() if " ERROR authgate" in line]
        assert not errors, errors[:20]
