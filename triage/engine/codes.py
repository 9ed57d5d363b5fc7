"""Error codes and the failure family each points at: ACL and runtime return codes, CANN's
E<module><4 digits> codes and torch_npu's ERR codes, read from the KB's codes table.

Codes follow vendor-wide schemes, so they generalise where wording does not: a message nobody
wrote an entry for often still carries `507035` or `EI0006`. A code is a vote, not a verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

CodeRow = tuple[str, str, str]
"""(code or prefix ending in `*`, category, meaning)."""

_CODE = re.compile(r"\b(E[A-Z0-9]\d{4}|ERR\d{5}|[1-5]\d{5})\b")


@dataclass(frozen=True)
class Decoded:
    code: str
    category: str
    meaning: str


class CodeTable:
    def __init__(self, rows: tuple[CodeRow, ...]) -> None:
        self._rows = rows

    @cached_property
    def _patterns(self) -> tuple[tuple[re.Pattern[str], str, str], ...]:
        # Rows come exact first, then prefixes: the first that matches wins (EL0004 before EL*).
        return tuple(
            (re.compile(re.escape(code).replace(r"\*", "[A-Z0-9]*") + "$"), category, meaning)
            for code, category, meaning in self._rows
        )

    def decode(self, text: str) -> list[Decoded]:
        """The known codes in a line, each once, in order."""
        found: list[Decoded] = []
        for code in dict.fromkeys(_CODE.findall(text)):
            for pattern, category, meaning in self._patterns:
                if pattern.match(code):
                    found.append(Decoded(code, category, meaning))
                    break
        return found
