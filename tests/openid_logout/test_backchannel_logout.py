"""OpenID Connect Back-Channel Logout 1.0 as authgate sends it: whenever an authgate session
ends, for whatever reason, every client that received tokens in it and registered a
``backchannel_logout_uri`` gets a logout token (checked by the receiver as the OIDF
``oidcc-backchannel-rp-initiated-logout-certification-test-plan`` checks it), and the session's
token families die with it. On memory, SQLite and PostgreSQL, over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from authgate.domain.model import Outcome
from authgate.domain.openid.logout import PendingLogout
from authgate.entrypoints import operator
from tests.app.conftest import CALLBACK_URL, MakeService, load_config
from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.events import apple_notification, logout_token
from tests.support.waiting import eventually

from .conftest import ISSUER, WEB_LOGOUT, Provider, Receiver, Session, op_config, open_provider

STATE = "s" * 128


async def told(op: Provider, session: Session, *clients: str) -> None:
    """Wait until each of ``clients`` got a logout token for the session that passed every
    check, and check what it says about the session."""

    def arrived() -> bool:
        got = {d.client_id for d in op.receiver.for_session(session.session_id)}
        return got >= set(clients)

    await eventually(arrived, what=f"logout tokens of {clients} for {session.session_id}")
    for delivery in op.receiver.for_session(session.session_id):
        assert delivery.problems == [], delivery.problems
        assert delivery.content_type == "application/x-www-form-urlencoded"
        claims = delivery.claims
        assert (claims["sub"], claims["sid"]) == (session.account_id, session.session_id)
        assert claims["aud"] == delivery.client_id
        assert claims["exp"] - claims["iat"] == 120
    assert sorted(d.client_id for d in op.receiver.for_session(session.session_id)) == sorted(
        clients
    ), "one logout token per client"


async def settled(op: Provider) -> None:
    """Wait until the outbox is empty (every delivery done, and its row removed)."""

    async def empty() -> bool:
        return await op.outbox() == []

    await eventually(empty, what="the back-channel logout outbox emptied")


async def audited(op: Provider, outcome: Outcome) -> list[Any]:
    return [e for e in await op.audit() if e.outcome is outcome]


# -- the OIDF modules -----------------------------------------------------------------------


async def test_oidcc_backchannel_logout_discovery_endpoint_verification(op: Provider) -> None:
    document = await (await op.client.get("/.well-known/openid-configuration")).json()
    assert document["backchannel_logout_supported"] is True
    assert document["backchannel_logout_session_supported"] is True
    assert document["end_session_endpoint"] == ISSUER + "/oauth2/logout"
    for name, value in document.items():
        if name.endswith("_endpoint"):
            assert value.startswith("https://"), name


async def test_oidcc_backchannel_rp_initiated_logout(op: Provider) -> None:
    session = await op.signed_in()
    await op.served(session, "webapp", "mobile")  # mobile registered no back-channel endpoint
    family = await op.family(session)
    hint = op.id_token(session)

    answer = await op.client.get(
        "/oauth2/logout",
        params={"id_token_hint": hint, "post_logout_redirect_uri": WEB_LOGOUT, "state": STATE},
        headers=session.cookie,
        allow_redirects=False,
    )

    assert answer.status == 302
    assert answer.headers["Location"] == f"{WEB_LOGOUT}?state={STATE}"
    await told(op, session, "webapp")
    [delivery] = op.receiver.deliveries
    assert delivery.header["alg"] == "RS256"
    assert not await op.family_live(family)
    assert await op.status(session) == 401
    assert await op.prompt_none(session) == "login_required"
    await settled(op)
    [sent] = await audited(op, Outcome.BACKCHANNEL_LOGOUT_SENT)
    assert (sent.provider, sent.account_id) == ("webapp", session.account_id)
    assert sent.detail == f"session {session.session_id}: after 1 attempt(s)"


# -- every way a session ends ---------------------------------------------------------------


async def test_signing_out_tells_the_clients_and_ends_the_families(op: Provider) -> None:
    session = await op.signed_in()
    other = await op.signed_in(intent="login")  # the same account, another browser
    await op.served(session, "webapp", "admin")
    await op.served(other, "webapp")
    ended, kept = await op.family(session, "admin"), await op.family(other)

    answer = await op.client.post("/v1/auth/logout", headers=session.bearer)

    assert answer.status == 204
    await told(op, session, "webapp", "admin")
    assert not await op.family_live(ended)
    assert await op.family_live(kept)
    assert op.receiver.for_session(other.session_id) == []
    await settled(op)


async def test_withdrawing_an_application_ends_no_session_and_tells_no_client(
    op: Provider,
) -> None:
    """Withdrawing consent (DELETE /v1/account/apps/{client_id}) revokes the application's
    token families but ends no authgate session, so no logout token goes out; the session's
    end, later, still tells every application that received tokens in it."""
    session = await op.signed_in()
    await op.served(session, "webapp", "admin")
    family = await op.family(session)

    answer = await op.client.delete("/v1/account/apps/webapp", headers=session.bearer)

    assert answer.status == 204
    assert not await op.family_live(family)
    assert await op.status(session) == 200
    assert await op.outbox() == []  # queued in the same transaction, if at all
    assert op.receiver.for_session(session.session_id) == []
    out = await op.client.post("/v1/auth/logout", headers=session.bearer)
    assert out.status == 204
    await told(op, session, "webapp", "admin")
    await settled(op)


async def test_signing_out_everywhere_tells_the_clients_of_every_session(op: Provider) -> None:
    one = await op.signed_in()
    two = await op.signed_in(intent="login")
    stranger = await op.signed_in("grace-1")
    for session in (one, two, stranger):
        await op.served(session, "webapp")
    families = [await op.family(s) for s in (one, two, stranger)]

    answer = await op.client.post(
        "/v1/auth/logout", params={"everywhere": "true"}, headers=two.bearer
    )

    assert answer.status == 204
    await told(op, one, "webapp")
    await told(op, two, "webapp")
    assert [await op.family_live(f) for f in families] == [False, False, True]
    await settled(op)
    assert op.receiver.for_session(stranger.session_id) == []


async def test_revoking_a_session_tells_its_clients(op: Provider) -> None:
    old = await op.signed_in()
    current = await op.signed_in(intent="login")
    await op.served(old, "admin")
    family = await op.family(old, "admin")

    answer = await op.client.delete(
        f"/v1/account/sessions/{old.session_id}", headers=current.bearer
    )

    assert answer.status == 204, await answer.text()
    await told(op, old, "admin")
    assert not await op.family_live(family)
    assert await op.status(current) == 200


async def test_unlinking_a_provider_tells_the_clients_of_the_sessions_it_ends(
    op: Provider,
) -> None:
    main = await op.signed_in("ada-google")
    apple = await link_apple(op, main, "ada-apple")
    await op.served(apple, "webapp")
    await op.served(main, "webapp")
    family = await op.family(apple)

    answer = await op.client.delete("/v1/account/providers/apple", headers=main.bearer)

    assert answer.status == 200, await answer.text()
    await told(op, apple, "webapp")
    assert not await op.family_live(family)
    assert op.receiver.for_session(main.session_id) == []


async def test_deleting_the_account_tells_the_clients(op: Provider) -> None:
    session = await op.signed_in()
    await op.served(session, "webapp", "admin")

    answer = await op.client.delete("/v1/account", headers=session.bearer)

    assert answer.status == 204, await answer.text()
    await told(op, session, "webapp", "admin")
    await settled(op)
    # The account is gone; its audit trail keeps what was sent on its behalf.
    sent = await audited(op, Outcome.BACKCHANNEL_LOGOUT_SENT)
    assert {e.provider for e in sent} == {"webapp", "admin"}


async def test_a_providers_backchannel_logout_tells_the_clients(op: Provider) -> None:
    session = await op.signed_in("ada-bc")
    sid = op.signin.idp.google.last_sid
    await op.served(session, "webapp")
    family = await op.family(session)

    answer = await op.client.post(
        "/v1/providers/google/backchannel-logout",
        data={"logout_token": logout_token(op.signin.idp.google, sub="ada-bc", sid=sid)},
    )

    assert answer.status == 200
    await told(op, session, "webapp")
    assert not await op.family_live(family)


async def test_a_providers_account_deletion_tells_the_clients(op: Provider) -> None:
    session = await op.signed_in("000123.apple-ada.0456", provider="apple")
    await op.served(session, "admin")

    answer = await op.client.post(
        "/v1/providers/apple/notifications",
        json=apple_notification(op.signin.idp.apple, "account-delete", "000123.apple-ada.0456"),
    )

    assert answer.status == 200, await answer.text()
    await told(op, session, "admin")


async def test_the_operators_commands_tell_the_clients(op: Provider, tmp_path: Path) -> None:
    if op.store == "memory":
        return  # the operator's process reaches the database of running services only
    config = load_config(tmp_path, op_config(op.signin.idp, op.receiver, op.database_url))
    revoked = await op.signed_in("ada-op")
    deleted = await op.signed_in("grace-op")
    await op.served(revoked, "webapp")
    await op.served(deleted, "admin")
    family = await op.family(revoked)

    assert await operator.revoke_sessions(config, revoked.account_id) == 0
    assert await operator.delete_account(config, deleted.account_id) == 0

    # The command only queues: the running service's worker delivers (it polls).
    await told(op, revoked, "webapp")
    await told(op, deleted, "admin")
    assert not await op.family_live(family)


# -- delivery: retries, backoff, giving up --------------------------------------------------


async def test_a_client_that_is_down_is_told_once_it_is_back(op: Provider) -> None:
    session = await op.signed_in()
    await op.served(session, "webapp")
    op.receiver.failing = 2

    assert (await op.client.post("/v1/auth/logout", headers=session.bearer)).status == 204

    async def attempted(n: int) -> bool:
        rows = await op.outbox()
        return len(op.receiver.answered) >= n and len(rows) == 1 and rows[0].attempts == n

    await eventually(lambda: attempted(1), what="a first, failed attempt")
    op.clock.advance(1.5)  # the second attempt is due (after at most retry_initial)
    await eventually(lambda: attempted(2), what="a second, failed attempt")
    op.clock.advance(4.5)  # past the cap of the backoff
    await told(op, session, "webapp")
    await settled(op)
    assert op.receiver.answered == [503, 503, 200]
    [sent] = await audited(op, Outcome.BACKCHANNEL_LOGOUT_SENT)
    assert sent.detail == f"session {session.session_id}: after 3 attempt(s)"
    # Every attempt signs a token of its own (a client may refuse a jti it has seen).
    assert len({t for t in op.receiver.tokens}) == 3


async def test_the_backoff_doubles_up_to_its_cap(op_memory: Provider) -> None:
    op = op_memory
    session = await op.signed_in()
    await op.served(session, "webapp")
    op.receiver.failing = None  # down for good
    assert (await op.client.post("/v1/auth/logout", headers=session.bearer)).status == 204

    waits = []
    for attempt in range(1, 6):

        async def failed(n: int = attempt) -> bool:
            rows = await op.outbox()
            return bool(rows) and rows[0].attempts == n

        await eventually(failed, what=f"attempt {attempt} failed")
        [row] = await op.outbox()
        waits.append((row.next_attempt_at - op.clock.now()).total_seconds())
        op.clock.advance(5)  # beyond any wait: the next attempt is due
    # 1, 2, 4, 4, 4 seconds, each shortened by up to a fifth (jitter), never lengthened.
    for wait, full in zip(waits, [1, 2, 4, 4, 4], strict=True):
        assert 0.8 * full - 0.5 <= wait <= full, waits


async def test_a_delivery_is_given_up_after_its_bound_and_audited(
    op: Provider, caplog: Any
) -> None:
    session = await op.signed_in()
    await op.served(session, "webapp")
    op.receiver.failing = None
    assert (await op.client.post("/v1/auth/logout", headers=session.bearer)).status == 204

    async def failed_once() -> bool:
        rows = await op.outbox()
        return bool(rows) and rows[0].attempts >= 1

    await eventually(failed_once, what="a failed attempt")
    op.clock.advance(61)  # past give_up_after_seconds
    await settled(op)
    [given_up] = await audited(op, Outcome.BACKCHANNEL_LOGOUT_FAILED)
    assert given_up.provider == "webapp" and given_up.account_id == session.account_id
    assert "given up after" in (given_up.detail or "")
    assert "HTTP 503" in (given_up.detail or "")
    assert await audited(op, Outcome.BACKCHANNEL_LOGOUT_SENT) == []
    security = [r for r in caplog.records if r.name == "authgate.security"]
    assert any("failed permanently" in r.getMessage() for r in security)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert op.receiver.tokens and not any(t in logged for t in op.receiver.tokens)


async def test_a_client_no_longer_registered_is_given_up_at_once(op: Provider) -> None:
    """A row queued for a client the configuration has since dropped (a restart in between):
    nothing to send it to, so it is given up, audited, without waiting for the bound."""
    now = op.clock.now()
    async with op.resources.stores.units.begin() as tx:
        await tx.logout_outbox.add(
            PendingLogout("row-1", "retired", "acct-1", "sid-1", now, next_attempt_at=now)
        )
    await settled(op)
    [given_up] = await audited(op, Outcome.BACKCHANNEL_LOGOUT_FAILED)
    assert given_up.provider == "retired"
    assert "no longer registered" in (given_up.detail or "")
    assert op.receiver.tokens == []


async def link_apple(op: Provider, session: Session, sub: str) -> Session:
    """Link Apple to the session's account; the Apple sign-in's session."""
    response = await op.client.get(
        "/v1/auth/apple",
        params={"redirect_uri": CALLBACK_URL.format(name="apple"), "intent": "link"},
        headers={**session.bearer, "Accept": "application/json"},
    )
    assert response.status == 200, await response.text()
    binding = response.cookies["__Host-authgate_binding"].value
    details = await response.json()
    back = await op.signin.idp.authorize(details["authorizationUrl"], user=FakeUser(sub=sub))
    linked = await op.signin.callback("apple", back.params, binding=binding, method=back.method)
    assert "error=" not in linked.headers["Location"], linked.headers["Location"]
    return await op.signed_in(sub, provider="apple", intent="login")


async def test_a_sessions_end_is_delivered_at_once_not_at_the_next_poll(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    receiver: Receiver,
) -> None:
    """The commit that ended the session wakes the worker of its instance."""
    op = await open_provider(
        make_service,
        fake_idp,
        idp_clock,
        receiver,
        "memory://",
        "memory",
        {"logout_tokens": {"poll_seconds": 3600}},
    )
    session = await op.signed_in()
    await op.served(session, "webapp")
    assert (await op.client.post("/v1/auth/logout", headers=session.bearer)).status == 204
    await eventually(
        lambda: bool(op.receiver.for_session(session.session_id)),
        what="the logout token sent without waiting for a poll",
        within=10,
    )
