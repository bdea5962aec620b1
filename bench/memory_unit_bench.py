"""What one unit of work costs on the memory adapters when they hold 100 rows, and when they
hold 100,000: the unit should pay for what it touches, not for what the stores hold.

Each store of a :class:`~authgate.adapters.memory.MemoryUnitOfWork` is filled with ``N``
rows (accounts with their identity, sessions, sign-in events, passkeys, grants, refresh-token
families with their token, session clients, provider tokens, logout and revocation outbox
rows), then three units are timed, each many times over:

    read       an account, its session and a passkey of it looked up (a request's reads)
    write      a session extended, a sign-in recorded, an event logged, a grant touched
    rollback   the same writes, then the unit raises (its writes are put back)

Time is this process's CPU time (the machine's other work moves it far less than the wall
clock). After a round that warms up, the report gives each unit's median microseconds at both
sizes, side by side, and the ratio (cost at 100,000 / cost at 100): 1.0 means a unit's cost does not
grow with the rows held. The units touch accounts spread over the rows held (at 100,000,
mostly out of the CPU's caches); ``--hot`` has every unit touch the same account, which
leaves the unit's own work alone.

    .venv/bin/python bench/memory_unit_bench.py            # 7 rounds of 2,000 units (~30 s)
    .venv/bin/python bench/memory_unit_bench.py --hot      # one account touched, in cache
    .venv/bin/python bench/memory_unit_bench.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from authgate.adapters.memory import (
    MemoryAccounts,
    MemoryEvents,
    MemorySessionRecords,
    MemoryUnitOfWork,
)
from authgate.domain.model import (
    Outcome,
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    SessionRecord,
    SignInEvent,
    StoredProviderToken,
    VerifiedIdentity,
)
from authgate.domain.openid.logout import PendingLogout
from authgate.domain.openid.records import Grant, RefreshToken, SessionClient, TokenFamily
from authgate.domain.passkeys import Passkey

T0 = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
SIZES = (100, 100_000)
Unit = Callable[[int], Awaitable[None]]


class Boom(Exception):
    """Raised by the rollback unit after its writes."""


def _session(n: int, account: str) -> SessionRecord:
    return SessionRecord(
        id=f"sid-{n}",
        account_id=account,
        provider="google",
        created_at=T0,
        expires_at=T0 + DAY,
        absolute_expires_at=T0 + 30 * DAY,
        auth_time=T0,
    )


def _passkey(n: int, account: str) -> Passkey:
    return Passkey(
        id=f"pk-{n}",
        account_id=account,
        credential_id=n.to_bytes(8, "big") * 4,
        public_key=b"\xa5\x01\x02\x03\x26" + bytes(64),
        sign_count=0,
        transports=("internal",),
        aaguid="00000000-0000-0000-0000-000000000000",
        backup_eligible=True,
        backed_up=False,
        name=f"Passkey {n}",
        created_at=T0,
    )


def _event(n: int, account: str) -> SignInEvent:
    return SignInEvent(
        at=T0 + dt.timedelta(seconds=n),
        provider="google",
        outcome=Outcome.SIGNED_IN,
        client_address="203.0.113.7",
        user_agent="bench",
        account_id=account,
        detail=None,
    )


async def _openid_rows(units: MemoryUnitOfWork, n: int, account: str) -> None:
    sid, fam = f"sid-{n}", f"fam-{n}"
    await units.grants.put(Grant(account, "web", frozenset({"openid"}), T0, None))
    await units.refresh_tokens.start_family(
        TokenFamily(fam, "web", account, sid, T0, T0 + DAY),
        RefreshToken(f"rt-{n}", fam, "web", account, sid, ("openid",), T0, T0, T0 + 30 * DAY),
    )
    await units.session_clients.add(SessionClient(sid, "web", account, T0, T0 + DAY))
    await units.logout_outbox.add(PendingLogout(f"l-{n}", "web", account, sid, T0, T0))


async def _provider_rows(units: MemoryUnitOfWork, n: int, account: str) -> None:
    identity = ProviderIdentity("google", f"s-{n}")
    sealed = SealedToken("k1", f"sealed-{n}")
    await units.provider_tokens.put(StoredProviderToken(account, identity, sealed, T0))
    await units.revocations.add(PendingRevocation(f"r-{n}", account, identity, sealed, T0, T0))


async def held(rows: int) -> tuple[MemoryUnitOfWork, list[str]]:
    """A unit of work whose stores hold ``rows`` rows each (written outside any unit)."""
    accounts, events, sessions = MemoryAccounts(), MemoryEvents(rows), MemorySessionRecords()
    units = MemoryUnitOfWork(accounts, events, sessions)
    ids = []
    for n in range(rows):
        verified = VerifiedIdentity(ProviderIdentity("google", f"s-{n}"), f"u{n}@example.com")
        account, _ = await accounts.create_with_identity(verified, T0)
        ids.append(account.id)
        await sessions.add(_session(n, account.id))
        await events.record(_event(n, account.id))
        await units.passkeys.add(_passkey(n, account.id))
        await _openid_rows(units, n, account.id)
        await _provider_rows(units, n, account.id)
    return units, ids


def units_of(units: MemoryUnitOfWork, ids: list[str]) -> dict[str, Unit]:
    """The timed units, each given the number of the account it touches."""

    async def read(n: int) -> None:
        async with units.read() as tx:
            await tx.accounts.get(ids[n])
            await tx.sessions.get(f"sid-{n}")
            await tx.passkeys.get(ids[n], f"pk-{n}")

    async def writes(n: int) -> None:
        async with units.begin() as tx:
            now = T0 + dt.timedelta(seconds=n)
            await tx.sessions.extend(f"sid-{n}", now + DAY, now)
            await tx.accounts.record_login(ids[n], now)
            await tx.events.record(_event(n, ids[n]))
            await tx.grants.touch(ids[n], "web", now)

    async def rollback(n: int) -> None:
        try:
            async with units.begin() as tx:
                await tx.sessions.extend(f"sid-{n}", T0 + 2 * DAY, T0)
                await tx.accounts.record_login(ids[n], T0)
                await tx.events.record(_event(n, ids[n]))
                await tx.grants.touch(ids[n], "web", T0)
                raise Boom
        except Boom:
            pass

    return {"read": read, "write": writes, "rollback": rollback}


async def per_unit(unit: Unit, count: int, rows: int, hot: bool) -> float:
    """CPU microseconds per unit over ``count`` units touching accounts spread over the rows
    (``hot``: the same one)."""
    step = 0 if hot else max(rows // count, 1)
    started = time.process_time_ns()
    for i in range(count):
        await unit((i * step) % rows)
    return (time.process_time_ns() - started) / count / 1e3


async def measure(rounds: int, count: int, hot: bool = False) -> dict[int, dict[str, float]]:
    """Each size's median microseconds per unit of each kind."""
    results: dict[int, dict[str, float]] = {}
    for rows in SIZES:
        units, ids = await held(rows)
        timed = units_of(units, ids)
        samples: dict[str, list[float]] = {name: [] for name in timed}
        for round_ in range(rounds + 1):  # the first round warms up, and is not counted
            for name, unit in timed.items():
                cost = await per_unit(unit, count, rows, hot)
                if round_:
                    samples[name].append(cost)
        results[rows] = {name: statistics.median(s) for name, s in samples.items()}
        del units, ids, timed
    return results


def report(results: dict[int, dict[str, float]]) -> str:
    """The table: each unit's cost at both sizes and their ratio."""
    small, large = SIZES
    lines = [
        f"| unit | µs at {small:,} rows | µs at {large:,} rows | ratio {large:,} / {small:,} |",
        "|---|---|---|---|",
    ]
    for name in results[small]:
        a, b = results[small][name], results[large][name]
        lines.append(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.2f} |")
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=2_000, help="units per round")
    parser.add_argument("--hot", action="store_true", help="every unit touches one account")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    rounds, count = (2, 200) if args.quick else (args.rounds, args.count)
    print(report(asyncio.run(measure(rounds, count, args.hot))))


if __name__ == "__main__":
    main()
