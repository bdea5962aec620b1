"""The rate-limit notation and the in-process moving window (src/adapters/ratelimit/limiter.py).

The notation must mean exactly what ``limits`` makes of it (a Redis store still counts through
``limits``), so every string is parsed by both and the results compared.
"""

from __future__ import annotations

import uuid

import limits
import pytest
from hypothesis import given
from hypothesis import strategies as st

from authgate.adapters.ratelimit import RateLimitStore
from authgate.adapters.ratelimit.limiter import MovingWindow
from authgate.domain.rates import Rate, parse, parse_many

NOTATIONS = [
    "10/minute",
    "10 per minute",
    "10 / minute",
    " 10/minute ",
    "10/MINUTE",
    "10 Per Minute",
    "10/minutes",
    "5/2 hours",
    "5/2hours",
    "5 per 2 hours",
    "5/0 hours",
    "1/second",
    "100000000/minute",
    "3/day",
    "3/month",
    "3/year",
    "0/minute",
    "5/minute;100/hour",
    "5/minute, 100/hour",
    "5/minute|100/hour",
    "5/minute:,100/hour",
    "10/fortnight",
    "10/minutess",
    "10/ses",
    "ten/minute",
    "10",
    "/minute",
    "10/",
    "",
    "10/minute;",
    "10/-1 minute",
    "10 per",
    "10/minute extra",
    "1e3/minute",
]


def _limits_view(text: str) -> list[tuple[int, int, str]] | None:
    try:
        items = limits.parse_many(text)
    except ValueError:
        return None
    return [(i.amount, i.multiples, i.GRANULARITY.name) for i in items]


def _our_view(text: str) -> list[tuple[int, int, str]] | None:
    try:
        rates = parse_many(text)
    except ValueError:
        return None
    return [(r.amount, r.multiples, r.granularity) for r in rates]


@pytest.mark.parametrize("text", NOTATIONS)
def test_the_notation_means_what_limits_makes_of_it(text: str) -> None:
    assert _our_view(text) == _limits_view(text)


@given(
    st.text(
        alphabet=st.sampled_from(list("0123456789 /;,|:persecondminutehourdaymonthyearsPSM-x")),
        max_size=30,
    )
)
def test_any_string_is_parsed_as_limits_parses_it(text: str) -> None:
    assert _our_view(text) == _limits_view(text)


def test_a_rate_written_back_parses_to_the_same_limit_in_limits() -> None:
    for text in ("10/minute", "5/2 hours", "7 per 3 days", "1/second"):
        rate = parse(text)
        item = limits.parse(rate.text())
        assert (item.amount, item.multiples, item.GRANULARITY.name) == _limits_view(text)[0]  # type: ignore[index]
        assert item.get_expiry() == rate.seconds


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_at_most_amount_in_any_window_then_retry_after_the_oldest_leaves() -> None:
    clock = FakeClock()
    window = MovingWindow(clock)
    rate = Rate(3, 1, "minute")
    for step in (0.0, 10.0, 20.0):
        clock.now = 1000.0 + step
        assert window.hit(rate.amount, rate.seconds, "a").allowed
    clock.now = 1030.0
    refused = window.hit(rate.amount, rate.seconds, "a")
    assert not refused.allowed
    assert refused.retry_after_seconds == 30  # the request at 1000 leaves the window at 1060
    # A refused request is not counted: the first slot frees at 1060 exactly.
    clock.now = 1059.5
    assert not window.hit(rate.amount, rate.seconds, "a").allowed
    clock.now = 1060.0
    assert window.hit(rate.amount, rate.seconds, "a").allowed
    assert not window.hit(rate.amount, rate.seconds, "a").allowed


def test_keys_and_limits_count_apart() -> None:
    clock = FakeClock()
    window = MovingWindow(clock)
    one = Rate(1, 1, "second")
    assert window.hit(one.amount, one.seconds, "cb/a").allowed
    assert window.hit(one.amount, one.seconds, "cb/b").allowed
    assert window.hit(one.amount, one.seconds, "init/a").allowed
    assert not window.hit(one.amount, one.seconds, "cb/a").allowed
    assert window.hit(one.amount, one.seconds, "cb/a").retry_after_seconds == 1


def test_idle_keys_are_swept_but_not_those_of_a_longer_window() -> None:
    clock = FakeClock()
    window = MovingWindow(clock)
    hourly = Rate(1, 1, "hour")
    per_second = Rate(5, 1, "second")
    assert window.hit(hourly.amount, hourly.seconds, "hour/a").allowed
    for i in range(100):
        window.hit(per_second.amount, per_second.seconds, f"sec/{i}")
    assert len(window) == 101
    clock.now += MovingWindow.SWEEP_SECONDS + 1  # past every per-second window
    window.hit(per_second.amount, per_second.seconds, "sec/busy")
    assert len(window) == 2 and "hour/a" in window and "sec/busy" in window
    assert not window.hit(
        hourly.amount, hourly.seconds, "hour/a"
    ).allowed  # its request still counts
    clock.now += 3600
    window.hit(per_second.amount, per_second.seconds, "sec/busy")
    assert "hour/a" not in window
    assert window.hit(hourly.amount, hourly.seconds, "hour/a").allowed


def test_a_sweep_keeps_requests_still_in_their_window() -> None:
    clock = FakeClock()
    window = MovingWindow(clock)
    per_minute = Rate(2, 1, "minute")
    assert window.hit(per_minute.amount, per_minute.seconds, "a").allowed
    clock.now += 50
    assert window.hit(per_minute.amount, per_minute.seconds, "a").allowed
    clock.now += 15  # a sweep runs: the first request left, the second has not
    assert window.hit(per_minute.amount, per_minute.seconds, "a").allowed
    assert not window.hit(per_minute.amount, per_minute.seconds, "a").allowed


async def test_a_memory_store_counts_each_namespace_without_limits_storage() -> None:
    store = RateLimitStore("memory://")
    callback = store.limiter("2/minute", namespace="authgate-callback")
    initiation = store.limiter("1/minute", namespace="authgate-initiation")
    assert (await callback.hit("198.51.100.7")).allowed
    assert (await callback.hit("198.51.100.7")).allowed
    refused = await callback.hit("198.51.100.7")
    assert not refused.allowed and 1 <= refused.retry_after_seconds <= 60
    assert (await initiation.hit("198.51.100.7")).allowed
    assert not (await initiation.hit("198.51.100.7")).allowed


@pytest.mark.parametrize("storage", ["memory", "redis"])
async def test_a_peek_says_what_a_hit_would_and_spends_nothing(
    storage: str, request: pytest.FixtureRequest
) -> None:
    """The token endpoint spends an address's failure budget only on a failure, and peeks at
    it before any work: the peek must agree with the hit and never count."""
    url = "memory://" if storage == "memory" else request.getfixturevalue("redis_url")
    store = RateLimitStore(url)
    failures = store.limiter("2/minute", namespace=f"authgate-test-{uuid.uuid4().hex}")
    for _ in range(5):
        assert (await failures.peek("198.51.100.7")).allowed  # counts nothing
    assert (await failures.hit("198.51.100.7")).allowed
    assert (await failures.peek("198.51.100.7")).allowed
    assert (await failures.hit("198.51.100.7")).allowed
    peeked = await failures.peek("198.51.100.7")
    assert not peeked.allowed and 1 <= peeked.retry_after_seconds <= 60
    assert not (await failures.hit("198.51.100.7")).allowed
    assert (await failures.peek("198.51.100.8")).allowed  # another key


def test_a_peek_keeps_no_key() -> None:
    window = MovingWindow(FakeClock())
    assert window.peek(1, 60, "a").allowed
    assert len(window) == 0
