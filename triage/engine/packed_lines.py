"""New lines matched together: what the prefilters flag on each, packed into one small buffer.

The native shape table hands back the first line of each shape it does not know (see
`triage.engine.native_lines`); one prefilter call over all of them costs less than one a line.
"""

from __future__ import annotations

from triage.engine.cause_lines import CAUSE_ONLY, union_flags
from triage.engine.confirm import error_context
from triage.engine.held_lines import Seen
from triage.engine.hex_ids import HexIds
from triage.engine.lines import Scope
from triage.engine.normalize import DIGITS_TO_ZERO, decode_line, masked_ids
from triage.engine.shapes import MATCH_WINDOW

Ids = set[int] | frozenset[int] | None
Fresh = tuple[int, int, Ids, set[int] | None, bool]
"""A line of a shape not registered: start, end, its ids, cause ids, and whether its shape may stand
for its other lines."""


def match_packed(scope: Scope, hex_ids: HexIds, block: bytes, new: list[Seen], *, judge: bool) -> list[Fresh]:
    """What the prefilters flag on short new lines, and (when asked to `judge`) whether each one's
    shape may stand for its other lines."""
    if not new:
        return []
    raws = [block[start:end] for start, end, _, _ in new]
    packed, starts = _pack(raws)
    prefilter = scope.prefilter
    ids: list[Ids] = [CAUSE_ONLY] * len(new)
    for start, _, flagged in prefilter.candidates(packed):
        ids[starts[start]] = flagged
    cause_ids: list[set[int] | None] = [None] * len(new)
    if scope.cause_lines.enabled:
        for start, _, flagged in prefilter.cause_candidates(packed):
            cause_ids[starts[start]] = flagged
    apart = _apart(scope, hex_ids, new, raws) if judge else set(range(len(new)))
    return [(start, end, ids[n], cause_ids[n], n not in apart) for n, (start, end, _, _) in enumerate(new)]


def long_line_flags(
    scope: Scope, hex_ids: HexIds, block: bytes, span: tuple[int, int], pieces: list[tuple[int, int]] | None
) -> tuple[Ids, set[int] | None, list[tuple[int, int]]]:
    """What the prefilters flag on a line longer than a match window, and which of its pieces need
    nothing. Of a line of carriage-return pieces (a progress bar redrawn in place, megabytes of it),
    `pieces` are those whose shape the table does not know to need nothing: only they are scanned."""
    start, end = span
    if pieces is None or any(high - low > MATCH_WINDOW for low, high in pieces):
        prefilter = scope.prefilter
        found = prefilter.cause_candidates(block, start, end) if scope.cause_lines.enabled else []
        ids = next((flagged for _, _, flagged in prefilter.candidates(block, start, end)), CAUSE_ONLY)
        return ids, next((flagged for _, _, flagged in found), None), []
    flags = match_packed(scope, hex_ids, block, [(low, high, 0, -1) for low, high in pieces], judge=True)
    quiet = [
        (low, high)
        for low, high, flagged, causes, alike in flags
        if flagged is CAUSE_ONLY and causes is None and alike and masked_ids(block[low:high]) is None
    ]
    return (*union_flags((flagged, causes) for _, _, flagged, causes, _ in flags), quiet)


def _apart(scope: Scope, hex_ids: HexIds, new: list[Seen], raws: list[bytes]) -> set[int]:
    """Which of the lines have a shape whose digits may tell its lines apart: a digit that a
    pattern names, or a bare code on a line that reports an error. Judged with hex ids masked
    (see `hex_ids`): a digit inside an id is no code and names nothing."""
    masked = [hex_ids.masked(line[0]) or raw.translate(DIGITS_TO_ZERO) for line, raw in zip(new, raws)]
    judged, starts = _pack(masked)
    named, codes = scope.prefilter.digit_candidates(judged)
    apart = {starts[start] for start, _, _ in named}
    apart |= {starts[start] for start, _, _ in codes if error_context(decode_line(raws[starts[start]]))}
    return apart


def _pack(lines: list[bytes]) -> tuple[bytes, dict[int, int]]:
    """The lines joined into one buffer, and which of them starts at each offset."""
    starts, at = {}, 0
    for number, line in enumerate(lines):
        starts[at] = number
        at += len(line) + 1
    return b"\n".join(lines) + b"\n", starts
