"""Scan one big file on several cores: split it at line boundaries, scan the parts in forked
workers, absorb their findings in file order. The result is the same as a single-core scan."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from triage.engine.scan_part import ScanPart
from triage.engine.scanner import Scanner
from triage.sources import is_gzip

MIN_PART_BYTES = 64 << 20
"""Smaller files are not worth the workers' start and the merge."""
READ_SIZE = 8 << 20
SEEK_READ_SIZE = 1 << 20
"""The split point search reads this much at a time: a 2 GB line must not be read into memory whole."""

_worker_scanner: Scanner | None = None
"""The parent's scanner, inherited by forked workers: the KB and the prefilter come without pickling."""


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_split(path: str, jobs: int) -> bool:
    if jobs < 2 or path == "-" or is_gzip(path):  # no random access into stdin or a gzip stream
        return False
    try:
        if Path(path).stat().st_size < 2 * MIN_PART_BYTES:
            return False
    except OSError:
        return False
    import multiprocessing  # several ms of start-up: imported only for files worth splitting

    return "fork" in multiprocessing.get_all_start_methods()


def split_points(path: str, jobs: int) -> list[tuple[int, int]]:
    """Byte ranges that each start at a line start and together cover the file."""
    size = os.path.getsize(path)
    parts = max(1, min(jobs, size // MIN_PART_BYTES))
    starts = [0]
    with open(path, "rb") as handle:
        for number in range(1, parts):
            starts.append(max(_next_line_start(handle, number * size // parts, size), starts[-1]))
    ends = starts[1:] + [size]
    return [(start, end) for start, end in zip(starts, ends) if end > start]


def _next_line_start(handle: BinaryIO, offset: int, size: int) -> int:
    """The first line start after `offset` (`size` when none), reading a bounded block at a time."""
    handle.seek(offset)
    while block := handle.read(SEEK_READ_SIZE):
        newline = block.find(b"\n")
        if newline >= 0:
            return offset + newline + 1
        offset += len(block)
    return size


def _scan_range(path: str, start: int, end: int, source: str) -> ScanPart:
    assert _worker_scanner is not None
    scanner = Scanner(_worker_scanner.kb, prefilter=_worker_scanner.prefilter)
    with open(path, "rb") as handle:
        handle.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = handle.read(min(READ_SIZE, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            scanner.feed(chunk, source)
    scanner.finish(source)
    return scanner.part()


def scan_file_parallel(scanner: Scanner, path: str, source: str, jobs: int) -> None:
    """Scan `path` with `jobs` workers into `scanner`. Raises OSError like a plain read would."""
    import multiprocessing

    global _worker_scanner
    ranges = split_points(path, jobs)
    _worker_scanner = scanner
    try:
        with multiprocessing.get_context("fork").Pool(len(ranges)) as pool:
            parts = pool.starmap(_scan_range, [(path, start, end, source) for start, end in ranges])
    finally:
        _worker_scanner = None
    for part in parts:
        scanner.absorb(part, source)
