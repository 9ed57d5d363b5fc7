"""The lines the job context and the traceback frames still want, shown to them as the scan passes."""

from __future__ import annotations

from triage.engine.context import MAX_LINES as CONTEXT_LINES
from triage.engine.context import JobContext
from triage.engine.normalize import DIGITS_TO_ZERO, decode_line, without_ids
from triage.engine.shapes import MATCH_WINDOW
from triage.engine.unclaimed import MAX_FRAMES, UnclaimedErrors


def observe(
    context: JobContext,
    unclaimed: UnclaimedErrors,
    source: tuple[str, int],
    block: bytes,
    line: tuple[int, bytes],
    counted: tuple[int, int],
) -> tuple[int, int]:
    """Show a line (start, raw bytes) of a block of `source` (its name, the lines before the block)
    to the job context and the traceback frames while they still want lines; returns where the
    block's lines are counted up to and how many lie before it (`counted`, moved on if this line
    needed its number)."""
    if context.lines_seen >= CONTEXT_LINES and len(unclaimed.frames) >= MAX_FRAMES:
        return counted
    (line_start, raw), (position, newlines_before) = line, counted
    window = raw[:MATCH_WINDOW]
    text = decode_line(window)
    if context.lines_seen < CONTEXT_LINES:
        shown = without_ids(window)  # a request id that starts `910b` names no chip
        # The ids are masked already: the digits make the shape key (`shape_key` of the window).
        context.observe(text if shown is window else decode_line(shown), shown.translate(DIGITS_TO_ZERO))
    if len(unclaimed.frames) < MAX_FRAMES:
        newlines_before += block.count(b"\n", position, line_start)  # counted once: see Scanner._scan_block
        name, lines_before = source
        unclaimed.note_frame(text, (name, lines_before + newlines_before + 1))
        return line_start, newlines_before
    return counted
