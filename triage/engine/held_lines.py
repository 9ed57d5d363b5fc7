"""The cause lines that the native shape table held back for one block, and may count.

Their shapes are known: what their lines support is matched once per shape, and a line's rank is
read where its shape writes one. The scan counts them run by run, each run before the next line it
sees one by one (see `triage.engine.counts`).
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Callable, Sequence

from triage.engine.evidence import Sighting
from triage.engine.job_ranks import RankAt
from triage.engine.normalize import DIGITS_TO_ZERO
from triage.engine.shapes import Support

Seen = tuple[int, int, int, int]
"""A line the table handed back: start, end, its index in the block, its shape's id."""
END = sys.maxsize
"""Past any line: `HeldLines.before(END)` takes the lines left."""
HeldShape = tuple[set[int], RankAt]
"""Of a shape whose lines are held: the cause signatures that may match them, and where they write
their rank (see `job_ranks.rank_span`), if they do."""
NOT_HELD: HeldShape = (set(), None)
"""What a shape that is not held stands for here: one for all of them, on a log of a million shapes."""
Supports = Callable[[bytes, bytes, set[int]], tuple[Support, ...]]
"""`CauseLines.supports`: what a line (digit-masked, raw) supports of the cause signatures given."""


class HeldLines:
    def __init__(
        self,
        lines: list[Seen],
        block: bytes,
        first: int,
        shapes: Sequence[HeldShape],
        supports: Supports,
    ) -> None:
        self.lines = lines
        self.block = block
        self.first = first
        """The line number of the block's first line."""
        self._shapes = shapes
        self._supports = supports
        self._taken = 0
        self.next = lines[0][0] if lines else END
        """Where the next line not yet taken starts (END when none is left)."""

    def before(self, position: int) -> list[Seen]:
        """The lines not yet taken that start before `position`, in block order."""
        lines, taken = self.lines, self._taken
        end = bisect_left(lines, (position,), taken)  # (position,) sorts before every line starting there
        self._taken = end
        self.next = lines[end][0] if end < len(lines) else END
        return lines[taken:end]

    def supports(self, line: Seen, shape: int) -> tuple[Support, ...]:
        """What the lines of a shape support, matched on this one (once per shape, see `CauseLines`)."""
        raw = self.block[line[0] : line[1]]
        return self._supports(raw.translate(DIGITS_TO_ZERO), raw, self._shapes[shape][0])

    def names_rank(self, shape: int) -> bool:
        """Whether the lines of a shape write a rank (else theirs is the source's)."""
        return self._shapes[shape][1] is not None

    def rank(self, start: int, shape: int, source_rank: int | None) -> int | None:
        """The rank of the line at `start`, as `Sighting.rank` reads it."""
        at = self._shapes[shape][1]
        return source_rank if at is None else int(self.block[start + at[0] : start + at[1]])

    def sighting(self, line: Seen, order: int, source: str, source_rank: int | None) -> Sighting:
        start, end, index, shape = line
        return Sighting(order, source, self.first + index, self.block[start:end], source_rank, self._shapes[shape][1])


NO_HELD_LINES = HeldLines([], b"", 0, [], lambda key, raw, ids: ())
"""What a line finder without a shape table holds: nothing."""
