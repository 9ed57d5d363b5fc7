"""Version ranges a KB fix or cause declares (`applies_to.versions`), held against the versions a log shows.

Ascend versions mix numbers and tags (CANN 8.0.RC3, driver 24.1.rc2, torch_npu 2.1.0.post4): only
the leading numeric parts are compared, and only as many as both sides write, so a range never
drops a fix over a tag it cannot order (8.0.RC3 is in ">=8.0.1": the log does not say otherwise).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

_OPERATOR = r">=|<=|==|>|<"
_NUMBER = r"\d+(?:\.\d+)*"
CLAUSE = re.compile(rf"\s*({_OPERATOR})\s*({_NUMBER})\s*")
SPECIFIER = rf"^\s*(?:{_OPERATOR})\s*{_NUMBER}\s*(?:,\s*(?:{_OPERATOR})\s*{_NUMBER}\s*)*$"
"""A range as a KB writes it: clauses joined by commas, e.g. ">=23.0.0" or ">=2.1,<2.6"."""

_COMPARE: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}


def numeric_parts(version: str) -> tuple[int, ...]:
    """The leading numeric parts of a version: (8, 0) of "8.0.RC3", (2, 1, 0) of "2.1.0.post4"."""
    parts: list[int] = []
    for piece in version.lstrip("vV").split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.end() < len(piece):
            break  # "0rc1": the number is read, the tag after it ends the comparable part
    return tuple(parts)


def satisfies(version: str, specifier: str) -> bool | None:
    """Whether `version` lies in the range; None when it writes no number to compare."""
    shown = numeric_parts(version)
    if not shown:
        return None
    for clause in specifier.split(","):
        found = CLAUSE.fullmatch(clause)
        if found is None:
            raise ValueError(f"not a version range: {specifier!r}")
        bound = tuple(int(part) for part in found.group(2).split("."))
        width = min(len(shown), len(bound))
        if not _COMPARE[found.group(1)](shown[:width], bound[:width]):
            return False
    return True
