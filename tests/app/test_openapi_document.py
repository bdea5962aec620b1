"""The service's OpenAPI document as /docs shows it: every operation summarised, described and
grouped by a described tag, every parameter described, each error response named with example
bodies; and none of it narrows what the service accepts (spec 2.9's rules still hold)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from tests.app.conftest import PROVIDERS, MakeService, events_config
from tests.fakeidp import FakeIdP, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401

# Errors the service itself names (the layer's 413/415 and a 500 are generic).
NAMED_ERRORS = {"400", "401", "403", "404", "409", "429", "503"}


async def service_document(
    make_service: MakeService, fake: FakeIdP, clock: SettableClock
) -> tuple[TestClient[Any, Any], dict[str, Any]]:
    """Every operation registered: the fake's providers, with event receivers."""
    client = await make_service(events_config(fake, "memory://"), clock=clock)
    answer = await client.get("/openapi.json")
    assert answer.status == 200
    document: dict[str, Any] = await answer.json()
    return client, document


def keys(node: Any) -> set[str]:
    """Every key anywhere in a JSON tree."""
    if isinstance(node, dict):
        return set(node).union(*(keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(keys(v) for v in node))
    return set()


def operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", op)
        for path, item in document["paths"].items()
        for method, op in item.items()
    ]


async def test_every_operation_has_a_summary_a_description_and_described_tags(
    make_service: MakeService,
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> None:
    _, document = await service_document(make_service, fake_idp, idp_clock)
    validate(document)
    described = {t["name"]: t.get("description") for t in document["tags"]}
    assert {"sign-in", "account", "provider-events", "service"} <= set(described)
    assert all(described.values()), described
    found = operations(document)
    assert len(found) >= 15
    for name, op in found:
        assert op.get("summary"), name
        assert op.get("description"), name
        assert op.get("tags") and set(op["tags"]) <= set(described), name


async def test_every_parameter_is_described_with_providers_and_intents_as_examples(
    make_service: MakeService,
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> None:
    _, document = await service_document(make_service, fake_idp, idp_clock)
    for name, op in operations(document):
        for p in op.get("parameters", []):
            assert p.get("description"), f"{name}: {p['name']}"
    start = document["paths"]["/v1/auth/{provider}"]["get"]
    params = {p["name"]: p for p in start["parameters"]}
    provider = params["provider"]
    assert list(provider["examples"]) == list(PROVIDERS)  # the configured ones, in order
    assert all(name in provider["description"] for name in PROVIDERS)
    # Examples, never an enum: the schema stays spec 2.9's plain string.
    assert provider["schema"] == {"type": "string"}
    intent = params["intent"]
    assert set(intent["examples"]) == {"login", "register", "link", "reauthenticate"}
    assert intent["schema"] == {
        "type": "string",
        "pattern": "^(login|register|link|reauthenticate)$",
    }
    assert "redirect_uri" in params and "Required" in params["redirect_uri"]["description"]


async def test_error_responses_are_named_with_example_bodies(
    make_service: MakeService,
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> None:
    _, document = await service_document(make_service, fake_idp, idp_clock)
    for name, op in operations(document):
        if "service" in op["tags"]:  # the probes' 503 is a health report, not an error
            continue
        for status, response in op["responses"].items():
            if status not in NAMED_ERRORS:
                continue
            media = response["content"]["application/json"]
            assert media.get("examples"), f"{name} {status}"
            # The description names the response: its status and the codes it can carry.
            assert response["description"].split(":")[0] != "AppError", f"{name} {status}"
            for example in media["examples"].values():
                assert "error" in example["value"] or "err" in example["value"]
    start = document["paths"]["/v1/auth/{provider}"]["get"]["responses"]
    bad = start["400"]["content"]["application/json"]["examples"]
    assert bad["invalid_provider"]["value"]["error"] == "invalid_provider"
    assert "google, facebook, apple" in bad["invalid_provider"]["value"]["message"]
    # The layer's own answer to a declared parameter's invalid value, as it answers it.
    assert bad["invalid query parameter intent"]["value"] == {
        "error": "invalid parameter value in query: intent",
        "message": "intent must be one of login, register, link, reauthenticate",
    }
    assert "invalid_provider" in start["400"]["description"]
    assert set(start["429"]["content"]["application/json"]["examples"]) == {"rate_limited"}
    unlink = document["paths"]["/v1/account/providers/{provider}"]["delete"]["responses"]
    assert "last_provider" in unlink["409"]["content"]["application/json"]["examples"]
    assert "provider_not_linked" in unlink["404"]["content"]["application/json"]["examples"]
    assert "reauthentication_required" in unlink["401"]["content"]["application/json"]["examples"]
    assert "cross_site_request" in unlink["403"]["content"]["application/json"]["examples"]


async def test_the_documented_examples_do_not_narrow_what_is_accepted(
    make_service: MakeService,
    fake_idp: FakeIdP,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> None:
    client, document = await service_document(make_service, fake_idp, idp_clock)
    assert "enum" not in keys(document)
    answer = await client.get(
        "/v1/auth/nowhere", params={"redirect_uri": "http://127.0.0.1/cb"}, allow_redirects=False
    )
    assert answer.status == 400
    assert (await answer.json())["error"] == "invalid_provider"
