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


WINDOW_OVERLAP = 512
"""Bytes a window of a long line shares with the next where it cannot end between two pieces: a
message that the edge cuts is whole in one of them."""


def long_line_windows(line: bytes, size: int = MATCH_WINDOW) -> Iterator[tuple[int, int]]:
    """(start, end) of the windows in which a line longer than a match window is matched. A window
    ends before its last carriage return, and the next starts there: each piece of a progress bar
    (and a message among them) is whole in exactly one window, matched and counted once. Where no
    carriage return lies in a window's last part, it ends at its size and the next overlaps it."""
    start = 0
    while start + size < len(line):
        cut = line.rfind(b"\r", start + WINDOW_OVERLAP, start + size)
        end = cut if cut > 0 else start + size
        yield start, end
        start = cut if cut > 0 else end - WINDOW_OVERLAP
    yield start, len(line)
