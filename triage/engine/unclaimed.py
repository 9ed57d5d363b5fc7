"""Error lines that no KB entry claimed: the safety net's memory, bounded however long the log runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from triage.engine.error_lines import SALIENCE, message_of
from triage.engine.job_ranks import rank_of_line
from triage.engine.normalize import decode_line, mask_digits
from triage.results import EvidenceLine, replace

PER_KIND = 16
"""Distinct lines kept per kind of error: the first ones, since the first failure explains the rest."""
MAX_FRAMES = 48
TAIL_LINES = 6
TAIL_BYTES = 4096
"""How much of the end of each source is kept, for its last lines."""
FRAME = re.compile(
    r'File "(?P<file>[^"]+)", line \d+, in (?P<function>\S+)'
    r"|^\s*(?P<file2>[\w/.-]+\.py):\d+: in (?P<function2>\w+)"
    r"|^\s*(?P<file3>[\w/.-]+\.py)\(\d+\): (?P<function3>[\w<>]+)\s*$"
)
"""A traceback frame as Python prints it, as pytest does (`path/x.py:243: in __init__`), or as
pybind11 does under a C++ exception's `At:` (`path/x.py(14): <module>`)."""


def frame_path(found: re.Match[str]) -> str:
    """The source file a FRAME match names, as the frame prints it."""
    return found.group("file") or found.group("file2") or found.group("file3")


def frame_of(found: re.Match[str]) -> str:
    """`file function` of a FRAME match."""
    path = frame_path(found)
    function = found.group("function") or found.group("function2") or found.group("function3")
    return f"{path.rsplit('/', 1)[-1]} {function}"


@dataclass
class ErrorLine:
    order: int
    kind: str
    line: EvidenceLine
    message: str
    count: int = 1

    @property
    def salience(self) -> float:
        return SALIENCE[self.kind]


@dataclass
class UnclaimedErrors:
    by_key: dict[str, ErrorLine] = field(default_factory=dict)
    """Template of the message -> its first sighting."""
    kinds: dict[str, int] = field(default_factory=dict)
    frames: list[tuple[str, EvidenceLine]] = field(default_factory=list)
    """`file function` of the first traceback frames, with their lines: where the job was when it
    failed, and (the last one) where a traceback whose error line is missing had got to."""
    tails: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    """The last lines of each source: where a log that stalls without an error stopped."""
    ended: set[str] = field(default_factory=set)
    """The sources read to their end: only there does a log's last line say where the job stopped (a
    followed file that has not ended yet stops on whatever it printed last)."""

    def note_frame(self, text: str, where: tuple[str, int]) -> None:
        if len(self.frames) >= MAX_FRAMES:
            return
        found = FRAME.search(text)
        if found:
            self.frames.append((frame_of(found), EvidenceLine(source=where[0], line=where[1], text=text.strip()[:500])))

    def note(self, key: str, kind: str, make: Callable[[], ErrorLine]) -> ErrorLine | None:
        """Count an error line by its key: its first sighting, made by `make` only when it is kept
        (a kind's first PER_KIND keys); None when the kind is full. A log of a million distinct
        error lines builds sixteen sightings per kind, not a million."""
        seen = self.by_key.get(key)
        if seen is not None:
            seen.count += 1
            return seen
        if self.kinds.get(kind, 0) >= PER_KIND:
            return None
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        found = self.by_key[key] = make()
        return found

    def note_line(self, text: str, kind: str, order: int, where: tuple[str, int, int | None]) -> ErrorLine | None:
        """Count an error line of this kind by its message's template (see `note`); `where` is its
        source, line number and the source's rank (its own rank, if it names one, comes first)."""
        message = message_of(text)

        def sighting() -> ErrorLine:
            rank = rank_of_line(text)
            line = EvidenceLine(where[0], where[1], text.strip()[:500], where[2] if rank is None else rank)
            return ErrorLine(order, kind, line, message)

        return self.note(mask_digits(message)[:200], kind, sighting)

    def clear(self) -> None:
        """Forget every line noted (see `Scanner.forget_found`)."""
        self.by_key.clear()
        self.kinds.clear()
        self.frames.clear()
        self.tails.clear()

    def merge(self, later: UnclaimedErrors, line_offset: int, order_offset: int) -> None:
        """Fold in a later stretch of the same source (see `Scanner.absorb`)."""
        room = MAX_FRAMES - len(self.frames)
        self.frames += [(name, replace(line, line=line.line + line_offset)) for name, line in later.frames[:room]]
        self.tails.update(
            (source, [(number + line_offset, text) for number, text in tail]) for source, tail in later.tails.items()
        )
        self.ended |= later.ended
        for key, found in later.by_key.items():
            seen = self.by_key.get(key)
            if seen is not None:
                seen.count += found.count  # each of its lines, not one (`note` counts one line)
                continue

            def shifted(found: ErrorLine = found) -> ErrorLine:
                line = replace(found.line, line=found.line.line + line_offset)
                return replace(found, order=found.order + order_offset, line=line)

            self.note(key, found.kind, shifted)

    def most_telling(self, limit: int = 8) -> list[ErrorLine]:
        """The lines that best say what failed: most telling kind first, then earliest."""
        return sorted(self.by_key.values(), key=lambda e: (-e.salience, e.order))[:limit]


def numbered_tail(tail: bytes, last: int) -> list[tuple[int, str]]:
    """The last lines of a source from its last bytes (the first line may be cut), numbered up to
    `last`, the number of its last line."""
    raws = tail.splitlines()[1 if len(tail) >= TAIL_BYTES else 0 :]
    numbered = [(last - len(raws) + 1 + n, decode_line(raw)) for n, raw in enumerate(raws) if raw.strip()]
    return numbered[-TAIL_LINES:]
