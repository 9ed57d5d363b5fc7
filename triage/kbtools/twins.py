"""Corpus logs that repeat one another: one failure pasted on two pages (an issue and the pull request
that fixed it, a docs page and its mirror, a report cross-posted to two trackers).

Such a pair is one failure. Split by thread, its two logs can land one in each split, and the test log
is then no blind test: the train log beside it lends its lines to the neighbours and may have had an
entry written from it. `corpus_import` skips a mined log that repeats a case's, and a test holds the
test split free of logs that repeat a train log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from triage.engine.error_lines import error_kind

TELLING_CHARS = 30
"""Lines shorter than this (a bare `Traceback`, a banner) say nothing of which failure a log is."""
SHARED_BY = 2
"""A line that more than this many other logs print is boiler-plate (CANN's `TraceBack (most recent call
last):`, a launcher's frames): it tells no two failures apart, so a log's own lines are the others."""
REPEAT_SHARE = 0.5
"""A log that prints at least this share of another's own lines, an error line among them, repeats it: two
logs of one launcher or harness share frames, tables and banners, not the error."""


def telling_lines(log: Path) -> set[str]:
    text = log.read_text(encoding="utf-8", errors="replace")
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= TELLING_CHARS}


class LogIndex:
    """Which logs print each telling line."""

    def __init__(self, logs: Iterable[tuple[str, set[str]]] = ()) -> None:
        self._by_line: dict[str, set[str]] = {}
        for name, lines in logs:
            self.add(name, lines)

    def add(self, name: str, lines: set[str]) -> None:
        for line in lines:
            self._by_line.setdefault(line, set()).add(name)

    def twin(self, name: str, lines: set[str], among: Callable[[str], bool] = lambda _: True) -> str | None:
        """The log (of those `among` accepts, `name` aside) that prints REPEAT_SHARE of this log's own
        lines, if one does; `lines` are those of the log `name`, indexed or not."""
        own = 0
        shared: dict[str, int] = {}
        errors: set[str] = set()
        for line in lines:
            others = self._by_line.get(line, set()) - {name}
            if len(others) > SHARED_BY:
                continue
            own += 1
            kept = [other for other in others if among(other)]
            for other in kept:
                shared[other] = shared.get(other, 0) + 1
            if kept and error_kind(line) is not None:
                errors.update(kept)
        repeated = [other for other in errors if shared[other] >= REPEAT_SHARE * own]
        return max(repeated, key=lambda other: (shared[other], other), default=None)
