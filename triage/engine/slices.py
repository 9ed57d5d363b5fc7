"""Cut a read chunk into slices that end on line ends, so that the scan of one holds little at once."""

from __future__ import annotations

from collections.abc import Iterator

from triage.engine.shapes import MATCH_WINDOW

SCAN_SLICE = 1 << 20
"""The candidates of a slice are held at once: on a log of distinct error lines, those of a whole
8 MiB buffer cost a hundred MB; a slice this size keeps that to a tenth, at no cost in speed. Files
are read in chunks of this size (`sources.CHUNK_SIZE`); bigger buffers come from callers holding text."""


def line_slices(data: bytes, start: int, end: int, size: int = SCAN_SLICE) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive slices of data[start:end] (which ends with a newline), each about
    `size` bytes and ending on a line end; a line longer than `size` is one slice."""
    while start < end:
        stop = data.rfind(b"\n", start, min(start + size, end)) + 1
        if stop <= start:
            stop = data.find(b"\n", start, end) + 1 or end
        yield start, stop
        start = stop


def overlong_cut(line: bytes) -> int:
    """Where to cut a read's worth of a line too long to wait for its end: after the read's last
    carriage return, if one is near its end, so that a progress bar's piece (and a message among
    them) is matched whole with the next read, not as two pieces that mean nothing; else at its end."""
    return max(0, line.rfind(b"\r", len(line) - MATCH_WINDOW)) or len(line)
