"""The DeviceAuthorizations contract, run against every adapter (fixture ``store``): a
pending request is found by its user code until it is decided or expires, decided once,
used once by one of any number of concurrent polls, and goes with the account that decided
it."""

from __future__ import annotations

import asyncio
from typing import Any

from authgate.domain.openid.device import DeviceAuthorization
from tests.support.oauth_records import new_account
from tests.support.records import T0, at
from tests.support.stores import Store


def request(device: str = "device-1", user: str = "user-1", **kw: Any) -> DeviceAuthorization:
    fields: dict[str, Any] = {
        "client_id": "cli",
        "scopes": ("openid", "offline_access"),
        "status": "pending",
        "created_at": T0,
        "expires_at": at(600),
        "interval": 5,
    }
    return DeviceAuthorization(device_code_hash=device, user_code_hash=user, **(fields | kw))


async def _add(store: Store, added: DeviceAuthorization) -> None:
    async with store.units.begin() as tx:
        await tx.device_authorizations.add(added)


async def _decide(store: Store, account: str, user: str = "user-1", **kw: Any) -> Any:
    async with store.units.begin() as tx:
        return await tx.device_authorizations.decide(
            user,
            kw.pop("now", at(10)),
            approved=kw.pop("approved", True),
            account_id=account,
            session_id="sid-1",
            auth_time=at(5),
        )


async def _use(store: Store, device: str = "device-1", now: Any = None) -> Any:
    async with store.units.begin() as tx:
        return await tx.device_authorizations.use(device, now or at(20))


async def test_a_pending_request_is_found_by_its_user_code_until_it_expires(store: Store) -> None:
    added = request()
    await _add(store, added)
    async with store.units.read() as tx:
        assert await tx.device_authorizations.pending("user-1", at(1)) == added
        assert await tx.device_authorizations.pending("user-2", at(1)) is None
        assert await tx.device_authorizations.pending("user-1", at(600)) is None  # exclusive
        assert await tx.device_authorizations.polling("device-1") == added


async def test_a_request_is_decided_once(store: Store) -> None:
    account = await new_account(store)
    await _add(store, request())
    decided = await _decide(store, account)
    assert decided == request(
        status="approved", account_id=account, session_id="sid-1", auth_time=at(5)
    )
    assert await _decide(store, account, approved=False) is None
    async with store.units.read() as tx:
        assert await tx.device_authorizations.pending("user-1", at(11)) is None
        assert await tx.device_authorizations.polling("device-1") == decided
    await _add(store, request("device-2", "user-2"))
    denied = await _decide(store, account, "user-2", approved=False)
    assert denied is not None and denied.status == "denied"
    assert await _decide(store, account, "user-3") is None
    await _add(store, request("device-3", "user-3"))
    assert await _decide(store, account, "user-3", now=at(600)) is None  # expired


async def test_polls_are_recorded_with_their_interval(store: Store) -> None:
    await _add(store, request())
    async with store.units.begin() as tx:
        await tx.device_authorizations.polled("device-1", at(3), 10)
    async with store.units.read() as tx:
        polled = await tx.device_authorizations.polling("device-1")
    assert polled is not None
    assert (polled.last_polled_at, polled.interval) == (at(3), 10)
    assert polled.polled_too_soon(at(12)) and not polled.polled_too_soon(at(13))


async def test_an_approved_request_is_used_once(store: Store) -> None:
    account = await new_account(store)
    await _add(store, request())
    assert await _use(store) is None  # pending: nothing to use
    await _decide(store, account)
    used = await _use(store)
    assert used is not None and used.status == "used" and used.account_id == account
    assert await _use(store) is None
    await _add(store, request("device-2", "user-2"))
    await _decide(store, account, "user-2")
    assert await _use(store, "device-2", at(600)) is None  # expired


async def test_one_of_concurrent_uses_wins(store: Store) -> None:
    account = await new_account(store)
    await _add(store, request())
    await _decide(store, account)
    results = await asyncio.gather(*(_use(store) for _ in range(5)))
    assert sum(r is not None for r in results) == 1


async def test_expired_requests_are_purged_and_accounts_take_theirs(store: Store) -> None:
    account = await new_account(store)
    await _add(store, request())
    await _add(store, request("device-2", "user-2", expires_at=at(1200)))
    await _decide(store, account, "user-2")
    async with store.units.begin() as tx:
        assert await tx.device_authorizations.purge_expired(at(600)) == 1
        assert await tx.device_authorizations.polling("device-1") is None
    assert await store.accounts.delete(account)
    async with store.units.read() as tx:
        assert await tx.device_authorizations.polling("device-2") is None
