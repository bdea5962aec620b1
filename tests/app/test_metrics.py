"""``GET /metrics``: Prometheus scrapes the service's OpenTelemetry metrics (read here with
prometheus_client's own parser; tests/unit/test_request_durations.py holds the text to the SDK
exporter's, byte for byte). After sign-ins and failures the counts are right, the
histograms counted every callback, initiation and provider call, and no label carries a
state, a code, a token, an email or an account id."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.config import ConfigError, parse
from authgate.entrypoints.app.serving import build_app
from tests.fakeidp import FakeIdP, FakeUser, SettableClock, TokenMode

from .conftest import (
    APP_URL,
    CALLBACK_URL,
    PROVIDERS,
    Client,
    MakeService,
    SignIn,
    base_config,
    free_port,
    load_config,
    merge,
)

SECRET_STATE = "state-0123456789abcdef"
SECRET_CODE = "code-0123456789abcdef"


async def service(make_service: MakeService, fake_idp: FakeIdP, clock: SettableClock) -> SignIn:
    client = await make_service(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "ratelimit": {"initiation": "5/minute"},
            "providers": {p: fake_idp.config(p) for p in PROVIDERS},
            # Served on the main listener, as asked explicitly, so that the client scrapes it.
            "metrics": {"port": None},
        },
        clock=clock,
    )
    return SignIn(client, fake_idp, clock)


Samples = dict[str, list[tuple[dict[str, str], float]]]


async def scrape(client: Client) -> Samples:
    """Sample name -> (labels, value) of every sample of the scrape."""
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(await response.text()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def value(samples: Samples, name: str, **labels: Any) -> float:
    """The one sample of ``name`` whose labels include ``labels``; 0 when there is none."""
    found = [v for got, v in samples.get(name, []) if labels.items() <= got.items()]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else 0.0


async def test_scrape_counts_sign_ins_failures_and_rejections(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
) -> None:
    signin = await service(make_service, fake_idp, idp_clock)
    alice = FakeUser(sub="metrics-alice-sub", email="alice.metrics@example.com")
    bob = FakeUser(sub="metrics-bob-sub", email="bob.metrics@example.com")
    tokens = []
    for user in (alice, bob):
        registered = await signin.complete(user=user, intent="register")
        assert registered.status == 302, await registered.text()
        tokens.append(registered.cookies["session"].value)
    out = await signin.client.post(
        "/v1/auth/logout", headers={"Authorization": f"Bearer {tokens[0]}"}
    )
    assert out.status == 204
    unknown = FakeUser(sub="metrics-nobody-sub", email="nobody.metrics@example.com")
    not_found = await signin.complete(user=unknown)
    assert not_found.status == 302
    assert "account_not_found" in not_found.headers["Location"]
    forged = await signin.callback(
        "google", {"code": SECRET_CODE, "state": SECRET_STATE}, binding=None
    )
    assert forged.status == 401  # no browser: the JSON error
    signin.idp.providers["google"].token_mode = TokenMode.DOWN
    failed = await signin.complete(user=alice)
    assert "token_exchange_failed" in failed.headers["Location"]
    signin.idp.providers["google"].token_mode = TokenMode.OK
    assert (await signin.start()).status == 200  # the fifth start of the minute
    refused = await signin.start()
    assert refused.status == 429

    samples = await scrape(signin.client)

    sign_ins = "authgate_sign_ins_total"
    assert value(samples, sign_ins, provider="google", outcome="registered", reason="none") == 2
    assert value(samples, sign_ins, provider="google", outcome="account_not_found") == 1
    assert value(samples, sign_ins, provider="google", outcome="account_not_found") == value(
        samples, sign_ins, outcome="account_not_found", reason="account_not_found"
    )
    assert value(samples, sign_ins, provider="google", outcome="invalid_state") == 1
    failures = value(
        samples, sign_ins, provider="google", outcome="failed", reason="token_exchange_failed"
    )
    assert failures == 1
    assert sum(v for _, v in samples[sign_ins]) == 5
    assert value(samples, "authgate_callback_duration_seconds_count", provider="google") == 5
    # Every start is timed, the refused one is not (it is refused before the service).
    assert value(samples, "authgate_initiation_duration_seconds_count", provider="google") == 5
    assert value(samples, "authgate_rate_limit_rejections_total", limit="initiation") == 1
    assert value(samples, "authgate_rate_limit_rejections_total", limit="callback") == 0
    assert value(samples, "authgate_sessions_issued_total", provider="google") == 2
    assert value(samples, "authgate_sessions_revoked_total") == 1
    provider_calls = "authgate_provider_request_duration_seconds_count"
    # Three codes redeemed at the token endpoint, one refused by it (the forged callback
    # reaches no provider).
    assert value(samples, provider_calls, provider="google", call="token", outcome="ok") == 3
    assert value(samples, provider_calls, provider="google", call="jwks", outcome="ok") == 1
    discovered = value(samples, provider_calls, provider="google", call="discovery", outcome="ok")
    assert discovered == 1  # cached after the first
    assert value(samples, provider_calls, provider="google", call="token", outcome="failed") == 1

    http = "http_server_request_duration_seconds_count"
    route = "/v1/auth/{provider}"
    assert value(samples, http, http_route=route, http_response_status_code="200") == 5
    assert value(samples, http, http_route=route, http_response_status_code="429") == 1
    callbacks = value(
        samples,
        http,
        http_request_method="GET",
        http_route="/v1/auth/{provider}/callback",
        http_response_status_code="302",
    )
    assert callbacks == 4
    assert value(samples, http, http_response_status_code="401") == 1

    # Nothing a user, a provider or an attacker sent is a label value.
    accounts = [a.id for a in await accounts_of(signin)]
    secrets = [SECRET_STATE, SECRET_CODE, "@", "metrics-", "example.com", "eyJ", *accounts]
    secrets += [t[:20] for t in tokens]
    for name, rows in samples.items():
        for labels, _ in rows:
            for label in labels.values():
                assert not any(s in label for s in secrets), (name, labels)


async def accounts_of(signin: SignIn) -> list[Any]:
    from authgate.entrypoints.app.build import RESOURCES

    resources = signin.client.app[RESOURCES]  # type: ignore[index]
    found = []
    for user in ("metrics-alice-sub", "metrics-bob-sub"):
        from authgate.domain.model import ProviderIdentity

        account = await resources.stores.accounts.find_by_identity(ProviderIdentity("google", user))
        assert account is not None
        found.append(account)
    return found


async def test_metrics_is_not_an_api_operation_and_can_be_switched_off(
    make_service: MakeService,
) -> None:
    on = await make_service()
    document = await (await on.get("/openapi.json")).json()
    assert "/metrics" not in document["paths"]
    off = await make_service({"metrics": {"enabled": False}})
    assert (await off.get("/metrics")).status == 404


async def test_metrics_port_serves_the_scrape_on_a_listener_of_its_own(
    make_service: MakeService,
) -> None:
    with socket.socket() as probe:  # a free port on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = await make_service({"metrics": {"port": port}})
    assert (await client.get("/v1/auth/nowhere")).status == 400
    assert (await client.get("/metrics")).status == 404  # not on the main port
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as r:
        assert r.status == 200
        text = await r.text()
    assert "http_server_request_duration_seconds_count{" in text
    assert 'http_response_status_code="400"' in text


def test_metrics_port_must_differ_from_the_main_port(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"metrics\.port: must differ from rest\.port"):
        load_config(tmp_path, {"metrics": {"port": 8080}})


DEFAULT_SCRAPE = ("127.0.0.1", 9464)


def port_is_free(address: tuple[str, int]) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(address)
        except OSError:
            return False
    return True


async def test_by_default_metrics_are_on_loopback_9464_and_not_on_the_api_port(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    data = base_config(tmp_path)
    del data["metrics"]  # nothing said about metrics: the defaults
    config = parse(yaml.safe_dump(data, sort_keys=False))
    assert config.metrics.enabled
    assert (config.metrics.host, config.metrics.port) == DEFAULT_SCRAPE
    if not port_is_free(DEFAULT_SCRAPE):
        pytest.skip("127.0.0.1:9464 is taken on this machine (another exporter or instance)")
    client = await aiohttp_client(await assembly.create_app(config, build_app))
    answer = await client.get("/metrics")
    assert answer.status == 404  # the API's port: whoever reaches the API cannot read them
    assert "http_server_request" not in await answer.text()
    async with aiohttp.ClientSession() as http, http.get("http://127.0.0.1:9464/metrics") as r:
        assert r.status == 200
        assert r.headers["Cache-Control"] == "no-store"
        assert 'http_route="/metrics"' not in await r.text()  # the API saw only its 404


async def test_metrics_host_names_the_scrape_listener(make_service: MakeService) -> None:
    port = free_port()
    await make_service({"metrics": {"host": "127.0.0.2", "port": port}})
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.2:{port}/metrics") as r:
            assert r.status == 200
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.get(f"http://127.0.0.1:{port}/metrics")


def test_a_taken_metrics_port_stops_start_up_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data = merge(
            base_config(tmp_path),
            {"rest": {"port": free_port(), "host": "127.0.0.1"}, "metrics": {"port": port}},
        )
        path = tmp_path / "authgate.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        done = subprocess.run(
            [sys.executable, "-m", "authgate.entrypoints.cli", "serve", "--config", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"authgate: metrics.port: cannot listen on 127.0.0.1:{port}: "), (
        done.stderr
    )
    assert "metrics.enabled: false" in done.stderr
