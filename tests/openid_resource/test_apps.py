"""The person's applications on the account API (``GET /v1/account/apps``, ``DELETE
/v1/account/apps/{client_id}``), the grants in the data-protection export, and the OpenAPI
document of it all, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from typing import Any

from openapi_spec_validator import validate

from authgate.domain.model import Outcome
from authgate.domain.openid.records import Grant
from tests.fakeidp import FakeUser
from tests.openid_resource.conftest import Person, Provider

FRANK = FakeUser(sub="frank-1", email="frank@example.com", name="Frank F")


def bearer(person: Person) -> dict[str, str]:
    return {"Authorization": f"Bearer {person.session_token}"}


async def grant(provider: Provider, person: Person, client_id: str, *scopes: str) -> Grant:
    at = provider.clock.now().replace(microsecond=0)
    kept = Grant(
        account_id=person.account_id,
        client_id=client_id,
        scopes=frozenset(scopes),
        granted_at=at - dt.timedelta(days=2),
        last_used_at=at - dt.timedelta(hours=1) if client_id == "web" else None,
    )
    async with provider.resources.stores.units.begin() as tx:
        return await tx.grants.put(kept)


async def apps_of(provider: Provider, person: Person) -> list[dict[str, Any]]:
    answer = await provider.client.get("/v1/account/apps", headers=bearer(person))
    assert answer.status == 200, await answer.text()
    assert answer.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = await answer.json()
    apps: list[dict[str, Any]] = body["apps"]
    return apps


async def test_the_applications_with_a_grant_are_listed(provider: Provider) -> None:
    person = await provider.sign_in(FRANK)
    assert await apps_of(provider, person) == []
    web = await grant(provider, person, "web", "openid", "email")
    gone = await grant(provider, person, "gone", "openid")  # a client no longer registered
    stranger = await provider.sign_in(FakeUser(sub="stranger-1"))
    await grant(provider, stranger, "other", "openid")
    assert web.last_used_at is not None
    assert await apps_of(provider, person) == [
        {
            "clientId": "gone",
            "scopes": ["openid"],
            "grantedAt": gone.granted_at.isoformat(),
            "granted": True,
            "liveTokenFamilies": 0,
        },
        {
            "clientId": "web",
            "name": "Web app",
            "scopes": ["email", "openid"],
            "grantedAt": web.granted_at.isoformat(),
            "granted": True,
            "liveTokenFamilies": 0,
            "lastUsedAt": web.last_used_at.isoformat(),
        },
    ]


async def test_an_application_whose_tokens_still_work_is_listed_without_a_grant(
    provider: Provider,
) -> None:
    """No application holds working tokens of the person that the list does not show: one
    that needs no consent, or one whose grant is gone while a family of it still works."""
    person = await provider.sign_in(FRANK)
    issued_at = provider.clock.now()
    web = await provider.issue(person, client_id="web")  # no grant
    provider.clock.advance(60)
    await provider.issue(person, client_id="web", refresh=False)
    await grant(provider, person, "other", "openid")
    await provider.issue(person, client_id="other")
    # Not working: a revoked family, and one of a session that ended.
    revoked = await provider.issue(person, client_id="spa")
    async with provider.resources.stores.units.begin() as tx:
        await tx.refresh_tokens.revoke_family(revoked.family_id, provider.clock.now())
    elsewhere = await provider.sign_in(FRANK)
    await provider.issue(elsewhere, client_id="api")
    ended = await provider.client.delete(
        f"/v1/account/sessions/{elsewhere.session_id}",
        headers={"Authorization": f"Bearer {person.session_token}"},
    )
    assert ended.status == 204, await ended.text()

    apps = {a["clientId"]: a for a in await apps_of(provider, person)}
    assert set(apps) == {"other", "web"}
    assert apps["web"] == {
        "clientId": "web",
        "name": "Web app",
        "scopes": [],
        "grantedAt": apps["web"]["grantedAt"],
        "granted": False,
        "liveTokenFamilies": 2,
    }
    # When its oldest working family was issued.
    first_issued = dt.datetime.fromisoformat(apps["web"]["grantedAt"])
    assert issued_at <= first_issued < issued_at + dt.timedelta(seconds=30)
    assert apps["other"]["granted"] is True and apps["other"]["liveTokenFamilies"] == 1
    assert apps["other"]["scopes"] == ["openid"]

    # Withdrawn, it is gone from the list with its tokens.
    answer = await provider.client.delete("/v1/account/apps/web", headers=bearer(person))
    assert answer.status == 204
    assert not await provider.active(web.access_token)
    assert [a["clientId"] for a in await apps_of(provider, person)] == ["other"]


async def test_withdrawing_revokes_the_applications_tokens_at_once(provider: Provider) -> None:
    person = await provider.sign_in(FRANK)
    await grant(provider, person, "web", "openid", "email")
    await grant(provider, person, "other", "openid")
    web = await provider.issue(person, client_id="web")
    other = await provider.issue(person, client_id="other")
    assert web.refresh_token is not None
    assert await provider.active(web.access_token)

    answer = await provider.client.delete("/v1/account/apps/web", headers=bearer(person))
    assert answer.status == 204
    assert not await provider.active(web.access_token)
    assert not await provider.active(web.refresh_token)
    assert await provider.active(other.access_token)
    assert [a["clientId"] for a in await apps_of(provider, person)] == ["other"]
    audited = [
        e
        for e in await provider.resources.stores.events.for_account(person.account_id)
        if e.outcome is Outcome.APP_WITHDRAWN
    ]
    assert len(audited) == 1
    assert audited[0].detail == "client web: 1 token families revoked"
    # Gone now: a second withdrawal is an unknown application.
    again = await provider.client.delete("/v1/account/apps/web", headers=bearer(person))
    assert again.status == 404


async def test_an_application_without_consent_has_its_tokens_revoked_too(
    provider: Provider,
) -> None:
    """A first-party application records no grant; withdrawing it still revokes its tokens."""
    person = await provider.sign_in(FRANK)
    issued = await provider.issue(person, client_id="web")
    answer = await provider.client.delete("/v1/account/apps/web", headers=bearer(person))
    assert answer.status == 204
    assert not await provider.active(issued.access_token)


async def test_withdrawing_needs_a_recent_sign_in_and_a_known_application(
    memory_provider: Provider,
) -> None:
    provider = memory_provider
    person = await provider.sign_in(FRANK)
    await grant(provider, person, "web", "openid")

    unknown = await provider.client.delete("/v1/account/apps/nobody", headers=bearer(person))
    assert unknown.status == 404
    body = await unknown.json()
    assert body == {"error": "app_not_found", "message": body["message"]} and body["message"]

    cross_site = await provider.client.delete(
        "/v1/account/apps/web",
        headers={"Cookie": f"session={person.session_token}", "Origin": "https://evil.example"},
    )
    assert cross_site.status == 403

    provider.clock.advance(dt.timedelta(minutes=11).total_seconds())
    issued = await provider.issue(person, client_id="web")
    stale = await provider.client.delete("/v1/account/apps/web", headers=bearer(person))
    assert stale.status == 401
    assert (await stale.json())["error"] == "reauthentication_required"
    assert "insufficient_user_authentication" in stale.headers["WWW-Authenticate"]
    # Nothing was withdrawn.
    assert [a["clientId"] for a in await apps_of(provider, person)] == ["web"]
    assert await provider.active(issued.access_token)

    anonymous = await provider.client.get("/v1/account/apps")
    assert anonymous.status == 401


async def test_the_export_includes_the_grants(provider: Provider) -> None:
    person = await provider.sign_in(FRANK)
    web = await grant(provider, person, "web", "openid", "profile")
    answer = await provider.client.get("/v1/account/export", headers=bearer(person))
    assert answer.status == 200
    exported = await answer.json()
    assert web.last_used_at is not None
    assert exported["grants"] == [
        {
            "clientId": "web",
            "scopes": ["openid", "profile"],
            "grantedAt": web.granted_at.isoformat(),
            "lastUsedAt": web.last_used_at.isoformat(),
        }
    ]


async def test_the_openapi_document_describes_them(memory_provider: Provider) -> None:
    document = await (await memory_provider.client.get("/openapi.json")).json()
    validate(document)
    paths = document["paths"]
    listed = paths["/v1/account/apps"]["get"]["responses"]["200"]["content"]
    assert listed["application/json"]["schema"]["properties"]["apps"]["items"] == {
        "$ref": "#/components/schemas/AppInfo"
    }
    withdraw = paths["/v1/account/apps/{client_id}"]["delete"]["responses"]
    assert "app_not_found" in withdraw["404"]["content"]["application/json"]["examples"]
    assert "reauthentication_required" in withdraw["401"]["content"]["application/json"]["examples"]
    assert "cross_site_request" in withdraw["403"]["content"]["application/json"]["examples"]
    app = document["components"]["schemas"]["AppInfo"]
    assert set(app["properties"]) == {
        "clientId",
        "name",
        "scopes",
        "grantedAt",
        "lastUsedAt",
        "granted",
        "liveTokenFamilies",
    }
    assert "GrantExport" in document["components"]["schemas"]
    for path in ("/oauth2/userinfo", "/oauth2/revoke", "/oauth2/introspect"):
        assert path in paths
    userinfo = paths["/oauth2/userinfo"]["get"]["responses"]
    assert "insufficient_scope" in userinfo["403"]["content"]["application/json"]["examples"]
    introspect = paths["/oauth2/introspect"]["post"]["responses"]
    assert "unauthorized_client" in introspect["403"]["content"]["application/json"]["examples"]
    # The rules the whole document follows (tests/app/test_openapi_document.py), here for the
    # operations that exist only with clients registered.
    ours = {
        ("/v1/account/apps", "get"),
        ("/v1/account/apps/{client_id}", "delete"),
        ("/oauth2/userinfo", "get"),
        ("/oauth2/userinfo", "post"),
        ("/oauth2/revoke", "post"),
        ("/oauth2/introspect", "post"),
    }
    described = {t["name"] for t in document["tags"] if t.get("description")}
    for path, method in ours:
        op = paths[path][method]
        assert op.get("summary") and op.get("description"), (path, method)
        assert op.get("tags") and set(op["tags"]) <= described, (path, method)
        for p in op.get("parameters", []):
            assert p.get("description"), (path, method, p["name"])
        for status, response in op["responses"].items():
            if status in {"400", "401", "403", "404", "409", "429", "503"}:
                examples = response["content"]["application/json"].get("examples")
                assert examples, (path, method, status)
                assert all("error" in e["value"] for e in examples.values())
