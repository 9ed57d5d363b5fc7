"""A plain file's part read through read-only memory maps: the scan reads the page cache in place.

A read copies every byte into a new buffer before the scan reads it; on a quiet log that copy is a
good part of a worker's time. A window of the file mapped instead is read where it lies.

Only forked workers read this way (see `parallel`): a file cut short while it is mapped (a log
rotated by copytruncate) kills the process that touches the lost pages with SIGBUS, and a worker's
death is reported in one line while the other parts' findings are kept. A scan in the `triage`
process itself reads (see `sources.reads_to_line_ends`).
"""

from __future__ import annotations

import codecs
import mmap
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

from triage.engine.lines import NO_NATIVE
from triage.sources import reads_to_line_ends


def _native_count() -> Callable[[mmap.mmap, int, int], int] | None:
    try:
        from triage.engine._lineshapes import count_newlines
    except ImportError:  # no compiler where it was installed: the worker reads instead
        return None
    return count_newlines


_COUNT_NEWLINES = _native_count()


class MappedWindow(mmap.mmap):
    """A read-only window of a file. The scan uses it as it uses bytes: slices, `find`, `rfind`, a
    memoryview, `re`; `count` is the one method of bytes it needs that mmap lacks."""

    def count(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        if sub != b"\n" or _COUNT_NEWLINES is None:
            raise ValueError("a mapped window counts newlines only")
        return _COUNT_NEWLINES(self, start, len(self) if end is None else end)


Window = tuple[MappedWindow | bytes, int, int]
"""A mapped window (or, where the file cannot be mapped, a read) and the span of it to scan: whole
lines, except where the part ends."""


def can_map() -> bool:
    """Whether windows can be counted in native code (and the native code is not switched off)."""
    return _COUNT_NEWLINES is not None and os.environ.get(NO_NATIVE, "0") in ("", "0")


def mapped_windows(handle: BinaryIO, start: int, limit: int, size: int) -> Iterator[Window]:
    """Windows of about `size` bytes over handle's file[start:start + limit], each with the span of
    it to scan, which ends at its last line end (the next window starts there), or at the part's
    end; a UTF-8 BOM at the file's start is skipped, as a read skips it. Stops early, as a read
    does, where the file has become shorter than the part; reads the rest where a window cannot be
    mapped."""
    fileno, stop = handle.fileno(), start + limit
    at = start
    while at < stop:
        base = at - at % mmap.ALLOCATIONGRANULARITY  # a map starts on a page
        length = min(at - base + size, stop - base, os.fstat(fileno).st_size - base)
        if length <= at - base:
            return
        try:
            window = MappedWindow(fileno, length, access=mmap.ACCESS_READ, offset=base)
        except OSError:  # a file system that cannot map (some FUSE and network mounts): read the rest
            yield from read_windows(handle, at, stop - at, size)
            return
        begin = at - base
        if at == 0 and window[: len(codecs.BOM_UTF8)] == codecs.BOM_UTF8:
            begin += len(codecs.BOM_UTF8)
        last = base + length == stop
        end = length if last else window.rfind(b"\n", begin, length) + 1 or length
        yield window, begin, end
        at = base + end


def read_windows(handle: BinaryIO, start: int, limit: int, size: int) -> Iterator[Window]:
    """handle's file[start:start + limit] read as `mapped_windows` maps it: each read with the span of
    it to scan (see `sources.reads_to_line_ends`)."""
    handle.seek(start)
    yield from ((chunk, 0, end) for chunk, end in reads_to_line_ends(handle, limit, size))
