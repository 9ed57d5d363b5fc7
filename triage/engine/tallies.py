"""An entry's own lines counted in native code: what a tally of the shape table adds to evidence.

A warning that matches an entry and is no error for the safety net may be printed every step on
every rank: a quarter of a real log's lines. The shape table counts such lines where they lie (see
`_lineshapes.c`, TALLIED; a shape, or a digit group of one) and hands back, for each stretch of them
between two lines the scan sees, only what a line-by-line count would keep: per entry how many, its
first and last line, and per rank the first and last line (where a cause's waiting lines are
reached, and how far its window reaches). No line is read in Python except the two that may be
listed. Where such a line is also evidence of causes not spent yet (a repeat of it would count, or
wait), the table holds it as well, as a cause shape's line, and the tally ends after it where those
causes are of the tally's own entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Generic, TypeVar

from triage.engine.counts import Counts
from triage.engine.evidence import Sighting
from triage.engine.job_ranks import UNREAD
from triage.engine.shapes import Shape, Support

T = TypeVar("T")
NO_RANK = -1
"""What the table reports for a line whose shape writes no rank: the source's rank is its rank."""
MAX_RANK_DIGITS = 9
"""The longest rank the table reads (see `Shapes.register`); the native table's own, which a test holds
to this one."""
Where = tuple[int, str, int | None, int]
"""Of a tally: the order numbered lines reached before it, its source's name and rank, and the line
number of its block's first line."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a tally: its index in the block, which of the tally's lines it is, where it lies."""

    index: int
    ordinal: int
    start: int
    end: int
    shape: Shape


@dataclass(frozen=True, slots=True)
class Part:
    """The lines of one shape in a tally."""

    count: int
    first: Line
    last: Line
    ranks: tuple[tuple[int, int, int], ...]
    """(rank or NO_RANK, first index, last index), in the order the ranks first came."""

    @property
    def shape(self) -> Shape:
        return self.first.shape


@dataclass(frozen=True, slots=True)
class Tally:
    start: int
    """Where its first line starts in the block."""
    lines: int
    parts: tuple[Part, ...]


RawPart = tuple[int, int, int, int, int, int, int, int, int, int, tuple[tuple[int, int, int], ...]]
"""A part as the table gives it: id, count, first index, ordinal, start, end, the same of the last line, ranks."""


def tally_of(raw: tuple[int, tuple[RawPart, ...]], shapes: list[Shape | None]) -> Tally:
    """A tally as the table gives it (see `Shapes.tallies`), with each part's shape by its id."""
    lines, raw_parts = raw
    parts = []
    for shape_id, count, index, ordinal, start, end, last_index, last_ordinal, last_start, last_end, ranks in raw_parts:
        shape = shapes[shape_id]
        assert shape is not None  # the table tallies only shapes registered TALLIED, kept here by id
        first = Line(index, ordinal, start, end, shape)
        parts.append(Part(count, first, Line(last_index, last_ordinal, last_start, last_end, shape), ranks))
    return Tally(parts[0].first.start, lines, tuple(parts))


@dataclass
class EntryRun:
    """An entry's own lines in a tally, whatever their shapes."""

    count: int = 0
    first: Line | None = None
    last: Line | None = None
    rank_first: dict[int | None, int] = field(default_factory=dict)
    """Rank -> the index of its first line."""
    rank_last: dict[int | None, int] = field(default_factory=dict)

    def add(self, part: Part, source_rank: int | None) -> None:
        self.count += part.count
        if self.first is None or part.first.ordinal < self.first.ordinal:
            self.first = part.first
        if self.last is None or part.last.ordinal > self.last.ordinal:
            self.last = part.last
        for rank, first, last in part.ranks:
            key = source_rank if rank == NO_RANK else rank
            self.rank_first[key] = min(first, self.rank_first.get(key, first))
            self.rank_last[key] = max(last, self.rank_last.get(key, last))

    def ranks_in_order(self) -> list[tuple[int, int | None]]:
        """(index, rank) of each rank's first line, in line order."""
        return sorted((index, rank) for rank, index in self.rank_first.items())


def entry_runs(tally: Tally, source_rank: int | None) -> dict[int, EntryRun]:
    """Each entry's own lines in the tally (a line of a shape that matched two entries is both's)."""
    runs: dict[int, EntryRun] = {}
    for part in tally.parts:
        for entry in part.shape.primary:
            runs.setdefault(entry, EntryRun()).add(part, source_rank)
    return runs


def tally_pending(shape: Shape, flagged: tuple[Support, ...], spent: Callable[[Support], bool]) -> list[int] | None:
    """Whether the table may count a shape's lines itself (None: it may not), and the entries whose
    causes its lines are evidence of, of what the cause patterns `flagged` on it, and not spent yet
    (the table holds its lines for them, see `NativeLines._tally`). It may where entries' own
    signatures matched it, it is no error of its own for the safety net, the cause evidence of its
    own match is spent, and its rank, if it writes one, is where the table can read it."""
    at = shape.rank_at
    if not shape.primary or shape.unclaimed is not None or at is UNREAD or not all(map(spent, shape.supports)):
        return None
    if at is not None and at[1] - at[0] > MAX_RANK_DIGITS:
        return None
    return sorted({support[0] for support in flagged if not spent(support)})


def tally_leads(tallies: list[Tally], with_causes: frozenset[int]) -> list[tuple[frozenset[int] | None, int]]:
    """(entries, line index) of the tallies' lines that lead causes' lines (see `NearLeads`): of each
    shape, its first and last line. No cause line lies inside a tally: none of its lines is nearer
    to one than those."""
    found: list[tuple[frozenset[int] | None, int]] = []
    for tally in tallies:
        for part in tally.parts:
            entries = with_causes.intersection(part.shape.primary)
            if entries:
                found += [(entries, part.first.index), (entries, part.last.index)]
    return found


def count_tally(counts: Counts, tally: Tally, block: bytes, where: Where) -> None:
    """Count a tally's lines into each entry's evidence, as a count of each line would."""
    order, name, rank, first_line = where

    def sighting(line: Line) -> Sighting:
        raw = block[line.start : line.end]
        return Sighting(order + line.ordinal + 1, name, first_line + line.index, raw, rank, line.shape.rank_at)

    for entry, run in entry_runs(tally, rank).items():
        assert run.first is not None and run.last is not None  # a run holds a line at least
        first = sighting(run.first)
        last = first if run.last is run.first else sighting(run.last)
        lasts = {at: first_line + index for at, index in run.rank_last.items()}
        counts.run(entry, run.count, (first, last), (partial(_rank_firsts, run, first, first_line), lasts))


def _rank_firsts(run: EntryRun, first: Sighting, first_line: int) -> list[Sighting]:
    """The run's first line of each rank, in line order: all that a cause's waiting line asks of it
    (see `Counts.run`); never shown, so read from nothing."""
    name, order = first.source, first.order
    return [Sighting(order, name, first_line + index, b"", rank, None) for index, rank in run.ranks_in_order()]


class Retries(Generic[T]):
    """What to ask again once some cause evidence was counted (see `Counts.changes`), a bounded few:
    a tallied shape whose lines are held for evidence not spent yet is registered again with less
    to hold (see `NativeLines._tally`)."""

    def __init__(self, limit: int) -> None:
        self._items: list[T] = []
        self._limit = limit
        self._changes = 0

    def add(self, item: T) -> None:
        if len(self._items) < self._limit:
            self._items.append(item)

    def due(self, changes: int) -> list[T]:
        """The items to ask again (taken out), if evidence was counted since they were last asked."""
        if not self._items or changes == self._changes:
            return []
        self._changes = changes
        items, self._items = self._items, []
        return items
