"""The memory unit benchmark runs end to end (a smoke test, not a timed assertion): both
sizes are filled as it says, each unit is measured at each, and the units leave the stores as
their kind says (a read and a rollback change nothing, a write keeps its writes)."""

from __future__ import annotations

import pytest

from bench import memory_unit_bench as bench


async def test_a_small_run_reports_each_unit_at_both_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench, "SIZES", (10, 200))
    results = await bench.measure(rounds=1, count=20)
    assert set(results) == {10, 200}
    for costs in results.values():
        assert set(costs) == {"read", "write", "rollback"}
        assert all(cost > 0 for cost in costs.values())
    table = bench.report(results).splitlines()
    assert table[0] == "| unit | µs at 10 rows | µs at 200 rows | ratio 200 / 10 |"
    assert [row.split(" | ")[0] for row in table[2:]] == ["| read", "| write", "| rollback"]


async def test_the_units_do_what_they_are_named_for() -> None:
    units, ids = await bench.held(50)
    assert len(ids) == 50 and len(units.passkeys.snapshot()) == 50
    timed = bench.units_of(units, ids)
    before = units.grants.snapshot(), units.passkeys.snapshot()
    await timed["read"](3)
    await timed["rollback"](3)
    assert (units.grants.snapshot(), units.passkeys.snapshot()) == before
    await timed["write"](3)
    touched = units.grants.snapshot()[(ids[3], "web")]
    assert touched.last_used_at is not None
