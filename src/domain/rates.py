"""Rate limits in ``limits``' notation ("10/minute", "5/2 hours; 100/day"), parsed exactly as
``limits.parse_many`` parses them, so that only the Redis store imports ``limits``.
"""

from __future__ import annotations

import re

import attrs

# limits.util's expressions, verbatim (including its "(:?" group), so that every string limits
# accepts is accepted here and every one it refuses is refused.
_SEPARATORS = re.compile(r"[,;|]{1}")
_SINGLE = re.compile(
    r"""
    \s*([0-9]+)
    \s*(/|\s*per\s*)
    \s*([0-9]+)?
    \s*([a-z]+)
    \s*
    """,
    re.IGNORECASE | re.VERBOSE,
)
_EXPR = re.compile(
    rf"^{_SINGLE.pattern}(:?{_SEPARATORS.pattern}{_SINGLE.pattern})*$",
    re.IGNORECASE | re.VERBOSE,
)
_DAY = 24 * 60 * 60
# limits' granularities: a month is 30 days and a year 12 such months.
_SECONDS = {
    "second": 1,
    "minute": 60,
    "hour": 60 * 60,
    "day": _DAY,
    "month": 30 * _DAY,
    "year": 12 * 30 * _DAY,
}


@attrs.frozen
class Rate:
    """At most ``amount`` requests in any ``multiples`` times ``granularity`` (``seconds``)."""

    amount: int
    multiples: int
    granularity: str  # "second", "minute", … as limits names them

    @property
    def seconds(self) -> int:
        return _SECONDS[self.granularity] * self.multiples

    def text(self) -> str:
        """The limit in the notation (``limits.parse`` of it gives the same limit)."""
        return f"{self.amount}/{self.multiples} {self.granularity}"


def parse_many(text: str) -> list[Rate]:
    """The limits in ``text``; :class:`ValueError` where ``limits.parse_many`` raises one."""
    if not (isinstance(text, str) and _EXPR.match(text)):
        raise ValueError(f"couldn't parse rate limit string '{text}'")
    rates = []
    for part in _SEPARATORS.split(text):
        match = _SINGLE.match(part)
        if match:
            amount, _, multiples, unit = match.groups()
            rates.append(Rate(int(amount), int(multiples or 0) or 1, _granularity(unit)))
    return rates


def parse(text: str) -> Rate:
    """The first limit in ``text`` (as ``limits.parse``)."""
    return parse_many(text)[0]


def _granularity(unit: str) -> str:
    name = unit.lower()
    for candidate in (name, name.removesuffix("s")):
        if candidate in _SECONDS:
            return candidate
    raise ValueError(f"no granularity matched for {unit}")
