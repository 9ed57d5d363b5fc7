"""Which lines of a block the scanner must look at, and what may match them.

Two ways to the same lines: the prefilter scans the whole block (this module), or the native shape
table skips the lines whose shape is known to need nothing and the prefilter scans only the rest
(`triage.engine.native_lines`, where the compiled extension is built).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol

from triage.engine.cause_lines import CauseLines, Line, NearLeads, leads, merge
from triage.engine.compiled import CompiledKB
from triage.engine.context import JobContext
from triage.engine.held_lines import END, NO_HELD_LINES, HeldLines
from triage.engine.prefilter import Prefilter
from triage.engine.shapes import Shape
from triage.engine.counts import Counts
from triage.engine.tallies import Tally
from triage.engine.unclaimed import UnclaimedErrors

NO_NATIVE = "TRIAGE_NO_NATIVE"
"""Set (to anything but 0) to scan without the compiled extension: the pure-Python path."""

Marks = list[tuple[int, int]]
"""(offset, lines before it in the block) of some lines, so that the scan need not count them."""
Found = tuple[list[Line], Marks, HeldLines, list[Tally]]
"""The lines of a block to match one by one, marks, the cause lines to count in runs between them, and
the own lines to count in tallies between them."""


class LineFinder(Protocol):
    def lines(self, near: NearLeads, lines_before: int, block: bytes, span: tuple[int, int]) -> Found:
        """The lines of block[start:end] to match, after `lines_before` lines of their source."""
        ...

    def settle(self, block: bytes) -> None:
        """The lines of the last block are matched: learn what their shapes need."""
        ...


class Scope:
    """The scanner state a line finder reads: what shapes matched, and what still wants lines."""

    def __init__(
        self,
        kb: CompiledKB,
        prefilter: Prefilter,
        cause_lines: CauseLines,
        shapes: dict[bytes, Shape],
        with_causes: frozenset[int],
        counts: Counts,
    ) -> None:
        self.kb = kb
        self.prefilter = prefilter
        self.cause_lines = cause_lines
        self.shapes = shapes
        self.with_causes = with_causes
        self.counts = counts
        """What cause evidence is spent (see `Counts.spent`), and when that changes."""


class PrefilterLines:
    """The prefilter over every line of the block."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def lines(self, near: NearLeads, lines_before: int, block: bytes, span: tuple[int, int]) -> Found:
        scope = self._scope
        main = scope.prefilter.candidates(block, *span)
        if not scope.cause_lines.enabled:
            return merge(main, []), [], NO_HELD_LINES, []
        found, keys = leads(block, main, scope.shapes, scope.with_causes)
        plan = near.plan(block, span, found, lines_before)
        return scope.cause_lines.lines(block, plan.stretches, main, keys), plan.marks, NO_HELD_LINES, []

    def settle(self, block: bytes) -> None:
        """Nothing to learn: every line goes through the prefilter anyway."""


def line_finder(scope: Scope, context: JobContext, unclaimed: UnclaimedErrors) -> LineFinder:
    """The native finder where the extension is built and not turned off, else the prefilter's."""
    if os.environ.get(NO_NATIVE, "0") not in ("", "0"):
        return PrefilterLines(scope)
    try:
        from triage.engine.native_lines import NativeLines
    except ImportError:
        return PrefilterLines(scope)
    return NativeLines(scope, context, unclaimed)


def jump_marks(
    mark: tuple[int, int], marks: Iterator[tuple[int, int]], counted: tuple[int, int], line_start: int
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Past the line finder's marks (line start, newlines before it) up to `line_start`: the next mark,
    and where newlines are counted up to and how many lie before it (the last mark passed, if it lies
    beyond what was counted)."""
    while mark[0] <= line_start:
        if mark[0] > counted[0]:
            counted = mark
        mark = next(marks, (END, 0))
    return mark, counted
