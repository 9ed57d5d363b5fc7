"""Read the time a log line was written, from the formats Ascend jobs mix in one log.

Only the start of a line is searched: that is where loggers put the time, and a date quoted inside a
message (an "Arrival Time:[...]" field, a file name) is not when the line was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

SEARCH_PREFIX = 160
"""Loggers put the time within the first few fields; plog lines carry a module and pid before it."""

_DATED = re.compile(
    r"(?P<year>\d{4})[-/](?P<month>\d{2})[-/](?P<day>\d{2})[ T-]"
    r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})"
    # ",123" (logging), ".123456" (ISO) or CANN plog's ".167.645" (milliseconds.microseconds)
    r"(?:[.,](?P<fraction>\d{1,6})(?:\.(?P<micro>\d{3}))?)?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2}\b)?"
)
_GLOG = re.compile(
    # glog / c10 warnings: "[W1129 16:40:44.396]" or "I1129 16:40:44.396123 1234 file.cc:12]"
    r"(?:^|[\[\s])[IWEF](?P<month>\d{2})(?P<day>\d{2}) "
    r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:\.(?P<fraction>\d{1,6}))?"
)


@dataclass(frozen=True)
class LineTime:
    when: datetime
    """Naive; zoned times are converted to UTC so that they compare with each other."""
    has_year: bool
    """False for glog times, which carry no year: `when` then holds the year it was parsed with."""


def parse_time(text: str, *, year: int = 2000) -> LineTime | None:
    """The time at the start of `text`, or None. Year-less formats get `year` (2000 admits 29 Feb)."""
    head = text[:SEARCH_PREFIX]
    match = _DATED.search(head)
    if match:
        return _dated(match)
    match = _GLOG.search(head)
    if match:
        return _glog(match, year)
    return None


def _micros(fraction: str | None, micro: str | None) -> int:
    if fraction is None:
        return 0
    if micro is not None:
        return int(fraction) * 1000 + int(micro)
    return int(fraction.ljust(6, "0"))


def _dated(match: re.Match[str]) -> LineTime | None:
    try:
        when = datetime(
            int(match["year"]),
            int(match["month"]),
            int(match["day"]),
            int(match["hour"]),
            int(match["minute"]),
            int(match["second"]),
            _micros(match["fraction"], match["micro"]),
        )
    except ValueError:  # 2024-13-45 is a number that looks like a date, not a time
        return None
    zone = match["zone"]
    if zone:
        when = (when - _offset(zone)).replace(tzinfo=None)
    return LineTime(when, has_year=True)


def _offset(zone: str) -> timedelta:
    if zone == "Z":
        return timedelta(0)
    digits = zone[1:].replace(":", "")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return offset if zone[0] == "+" else -offset


def _glog(match: re.Match[str], year: int) -> LineTime | None:
    try:
        when = datetime(
            year,
            int(match["month"]),
            int(match["day"]),
            int(match["hour"]),
            int(match["minute"]),
            int(match["second"]),
            _micros(match["fraction"], None),
        )
    except ValueError:
        return None
    return LineTime(when, has_year=False)
