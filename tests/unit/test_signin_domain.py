"""The sign-in domain on memory adapters, with an in-process provider standing in for HTTP."""

from __future__ import annotations

import asyncio
import datetime as dt

import attrs
import pytest

from authgate.adapters.jose import JwtSessionTokens, ephemeral_keys
from authgate.adapters.memory import (
    MemoryAccounts,
    MemoryEvents,
    MemorySessionRecords,
    MemoryStates,
    MemoryUnitOfWork,
)
from authgate.adapters.revocations import LocalRevocations
from authgate.domain import errors
from authgate.domain.model import ClientInfo, Intent, Outcome, ProviderIdentity, VerifiedIdentity
from authgate.domain.redirects import safe_return_to
from authgate.domain.secrets import pkce_challenge
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.services.sessions import SessionPolicy, SessionService
from authgate.services.signin import SignInPolicy, SignInService

APP = "https://app.example.com"
CALLBACK = "https://api.example.com/v1/auth/google/callback"
CLIENT = ClientInfo("192.0.2.1", "pytest")


@attrs.define
class Clock:
    at: dt.datetime = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def now(self) -> dt.datetime:
        return self.at


@attrs.define
class Provider:
    """Hands out a prepared identity for any code; records what the domain asked."""

    name: str = "google"
    client_id: str = "client-google"
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    uses_nonce: bool = True
    uses_pkce: bool = True
    proves_login_time: bool = True
    subject: str = "sub-1"
    email_verified: bool | None = True
    auth_time: dt.datetime | None = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # a fresh login
    fail: Exception | None = None
    exchanges: list[dict[str, str | None]] = attrs.field(factory=list)

    async def authorization_url(
        self,
        *,
        state: str,
        redirect_uri: str,
        code_challenge: str | None,
        nonce: str | None,
        reauthenticate: bool = False,
    ) -> str:
        return f"https://idp.example/auth?state={state}&cc={code_challenge}&nonce={nonce}"

    async def check_response_issuer(self, iss: str | None) -> None:
        if iss is not None and iss != f"https://{self.name}.example":
            raise VerificationFailed(f"iss {iss!r} is not the provider's issuer")

    async def exchange(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str | None,
        nonce: str | None,
        user: str | None = None,
    ) -> VerifiedIdentity:
        self.exchanges.append(
            {"code": code, "redirect_uri": redirect_uri, "verifier": code_verifier, "nonce": nonce}
        )
        if self.fail is not None:
            raise self.fail
        return VerifiedIdentity(
            ProviderIdentity(self.name, self.subject),
            email="a@example.com",
            email_verified=self.email_verified,
            auth_time=self.auth_time,
        )


@pytest.fixture
def world() -> tuple[SignInService, Provider, MemoryAccounts, MemoryEvents, Clock]:
    provider = Provider()
    accounts, events, clock = MemoryAccounts(), MemoryEvents(), Clock()
    records = MemorySessionRecords()
    units = MemoryUnitOfWork(accounts, events, records)
    sessions = SessionService(
        tokens=JwtSessionTokens(
            ephemeral_keys(), issuer="t", audience="t", ttl=dt.timedelta(hours=24)
        ),
        records=records,
        units=units,
        channel=LocalRevocations(),
        clock=clock,
        policy=SessionPolicy(),
    )
    service = SignInService(
        providers={
            "google": provider,
            "facebook": Provider(name="facebook"),
            "apple": Provider(name="apple"),
        },
        accounts=accounts,
        states=MemoryStates(),
        events=events,
        units=units,
        sessions=sessions,
        clock=clock,
        policy=SignInPolicy(app_url=APP, callback_urls={"google": frozenset({CALLBACK})}),
    )
    return service, provider, accounts, events, clock


async def start(service: SignInService, **kw: object) -> str:
    auth = await service.start("google", redirect_uri=CALLBACK, binding="b" * 43, **kw)  # type: ignore[arg-type]
    return auth.state


async def complete(service: SignInService, state: str, **kw: object) -> object:
    args: dict[str, object] = {"code": "c", "state": state, "binding": "b" * 43, "client": CLIENT}
    args.update(kw)
    return await service.complete("google", **args)  # type: ignore[arg-type]


async def test_invalid_provider_names_value_and_lists_valid_ones_in_order(world) -> None:
    service = world[0]
    with pytest.raises(errors.InvalidProvider) as e:
        await service.start("github", redirect_uri=CALLBACK, binding="x")
    assert str(e.value) == "unsupported provider 'github'; valid providers: google, facebook, apple"


async def test_provider_is_checked_before_redirect_uri(world) -> None:
    with pytest.raises(errors.InvalidProvider):
        await world[0].start("nope", redirect_uri=None, binding="x")
    with pytest.raises(errors.MissingParameter) as e:
        await world[0].start("google", redirect_uri=None, binding="x")
    assert "redirect_uri" in str(e.value)


async def test_redirect_uri_must_be_configured_exactly(world) -> None:
    for uri in (CALLBACK + "/", CALLBACK + "?x=1", CALLBACK.upper(), "https://evil.tld/cb"):
        with pytest.raises(errors.InvalidRequest, match="redirect_uri"):
            await world[0].start("google", redirect_uri=uri, binding="x")


async def test_register_then_login_then_unknown_identity(world) -> None:
    service, provider, accounts, events, _ = world
    first = await complete(service, await start(service, intent=Intent.REGISTER))
    assert first.first_time and first.destination == f"{APP}/onboarding"
    again = await complete(service, await start(service, return_to="/settings"))
    assert not again.first_time and again.account.id == first.account.id
    assert again.destination == f"{APP}/settings"
    third = await complete(service, await start(service))
    assert third.destination == f"{APP}/dashboard"
    provider.subject = "someone-else"
    with pytest.raises(errors.AccountNotFound):
        await complete(service, await start(service))
    outcomes = [e.outcome for e in await events.recent()]
    assert outcomes == [
        Outcome.ACCOUNT_NOT_FOUND,
        Outcome.SIGNED_IN,
        Outcome.SIGNED_IN,
        Outcome.REGISTERED,
    ]
    assert (await accounts.get(first.account.id)).last_login_at is not None


async def test_state_is_single_use_expires_and_is_bound_to_provider_and_browser(world) -> None:
    service, _, _, _, clock = world
    state = await start(service, intent=Intent.REGISTER)
    await complete(service, state)
    with pytest.raises(errors.InvalidState):
        await complete(service, state)  # replay
    state = await start(service)
    clock.at += dt.timedelta(minutes=10, seconds=1)
    with pytest.raises(errors.InvalidState):
        await complete(service, state)  # expired
    state = await start(service)
    with pytest.raises(errors.InvalidState):
        await service.complete("facebook", code="c", state=state, binding="b" * 43, client=CLIENT)
    state = await start(service)
    with pytest.raises(errors.InvalidState):
        await complete(service, state, binding="other-browser")
    state = await start(service)
    with pytest.raises(errors.InvalidState):
        await complete(service, state, binding=None)


async def test_pkce_verifier_and_nonce_reach_the_exchange(world) -> None:
    service, provider, *_ = world
    auth = await service.start("google", redirect_uri=CALLBACK, binding="b" * 43)
    with pytest.raises(errors.AccountNotFound):
        await complete(service, auth.state)
    sent = provider.exchanges[-1]
    assert sent["redirect_uri"] == CALLBACK
    assert f"cc={pkce_challenge(sent['verifier'])}" in auth.authorization_url
    assert f"nonce={sent['nonce']}" in auth.authorization_url


async def test_exchange_and_verification_failures_become_authentication_failed(world) -> None:
    service, provider, accounts, *_ = world
    for failure, reason in (
        (ExchangeFailed("down"), "token_exchange_failed"),
        (VerificationFailed("bad sig"), "invalid_id_token"),
    ):
        provider.fail = failure
        with pytest.raises(errors.AuthenticationFailed) as e:
            await complete(service, await start(service, intent=Intent.REGISTER))
        assert e.value.reason == reason
    provider.fail = None
    provider.email_verified = False
    with pytest.raises(errors.AuthenticationFailed):
        await complete(service, await start(service, intent=Intent.REGISTER))
    assert await accounts.find_by_identity(ProviderIdentity("google", "sub-1")) is None


async def test_provider_error_consumes_state(world) -> None:
    service = world[0]
    state = await start(service)
    with pytest.raises(errors.AccessDenied):
        await complete(service, state, code=None, error="access_denied")
    with pytest.raises(errors.InvalidState):
        await complete(service, state)
    with pytest.raises(errors.AccessDenied):
        await complete(service, await start(service), error="user_cancelled_authorize")
    with pytest.raises(errors.ProviderError):
        await complete(service, await start(service), error="server_error")


async def test_missing_code_or_state(world) -> None:
    with pytest.raises(errors.InvalidRequest, match="code"):
        await complete(world[0], "s", code=None)
    with pytest.raises(errors.InvalidRequest, match="state"):
        await complete(world[0], None)


async def test_link_needs_caller_and_refuses_identity_of_another_account(world) -> None:
    service, provider, accounts, *_ = world
    with pytest.raises(errors.NotAuthenticated):
        await start(service, intent=Intent.LINK)
    alice = await complete(service, await start(service, intent=Intent.REGISTER))
    provider.subject = "bob"
    bob = await complete(service, await start(service, intent=Intent.REGISTER))
    provider.subject = "alice-2"
    linked = await complete(
        service,
        await start(
            service,
            intent=Intent.LINK,
            account_id=alice.account.id,
            session_id=alice.session.session_id,
        ),
    )
    assert linked.outcome is Outcome.LINKED and linked.account.id == alice.account.id
    provider.subject = "bob"
    with pytest.raises(errors.IdentityLinkedElsewhere):
        await complete(
            service,
            await start(
                service,
                intent=Intent.LINK,
                account_id=alice.account.id,
                session_id=alice.session.session_id,
            ),
        )
    assert [i.identity.subject for i in await accounts.list_identities(bob.account.id)] == ["bob"]


async def test_concurrent_first_sign_ins_create_one_account(world) -> None:
    service, *_ = world
    states = [await start(service, intent=Intent.REGISTER) for _ in range(20)]
    results = await asyncio.gather(*(complete(service, s) for s in states))
    assert len({r.account.id for r in results}) == 1
    assert sum(r.first_time for r in results) == 1


@pytest.mark.parametrize(
    "value",
    [
        "//evil.tld",
        "/\\evil.tld",
        "https://app.example.com.evil.tld/x",
        "https://evil.tld",
        "/ok\r\nSet-Cookie: x=1",
        "javascript:alert(1)",
        "https://user@app.example.com/x",
        "http://app.example.com/x",
    ],
)
def test_open_redirects_are_ignored(value: str) -> None:
    assert safe_return_to(value, APP) is None


def test_same_origin_return_to_is_kept() -> None:
    assert safe_return_to("/a?b=1", APP) == f"{APP}/a?b=1"
    assert safe_return_to(f"{APP}/x", APP) == f"{APP}/x"


def test_random_values_have_the_standard_forms() -> None:
    import re
    import uuid

    from authgate.domain.secrets import new_secret, random_uuid_hex

    values = {random_uuid_hex() for _ in range(200)}
    assert len(values) == 200
    for value in values:
        assert uuid.UUID(hex=value).version == 4
        assert uuid.UUID(hex=value).variant == uuid.RFC_4122
        assert uuid.UUID(hex=value).hex == value
    secrets_ = {new_secret() for _ in range(200)}
    assert len(secrets_) == 200
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", s) for s in secrets_)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", new_secret(16))
