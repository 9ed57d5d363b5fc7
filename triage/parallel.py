"""Scan big files on several cores: split each at line boundaries (several files of a multi-rank
job are parts already), scan the parts in forked workers, absorb their findings in file order.

Each worker but the first reads the CAUSE_WINDOW lines (2,000) before its part first, and forgets
what it counted there (`Scanner.forget_found`): a cause's line on one side of a split point then
counts for an own line on the other, as in one scan. The result is a single-core scan's: the same
diagnoses, counts, confidences and causes, on 132 logs glued from corpus logs and split in three
(where every line is near a split point); only which lines of a shape are listed as evidence may
differ (a worker lists the first line of each shape and of each cause it meets), and with them a
diagnosis's rank where its listed lines are dated; the same holds for rank files scanned in workers,
which need no lines before them (each is a source of its own)."""

from __future__ import annotations

import mmap
import os
import pickle
import select
import signal
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import BinaryIO, cast

from triage.engine.evidence import CAUSE_WINDOW
from triage.engine.scan_part import ScanPart
from triage.engine.scanner import Scanner
from triage.mapped import can_map, mapped_windows, read_windows
from triage.sources import CHUNK_SIZE, display_name, read_in_one_pass, reads_to_line_ends

MIN_PART_BYTES = 64 << 20
"""Smaller files are not worth the workers' start and the merge."""
SEEK_READ_SIZE = 1 << 20
"""The split point search reads this much at a time: a 2 GB line must not be read into memory whole."""
SPLIT_SEARCH_BYTES = 8 << 20
"""... and gives up a split point with no line start this close after it."""
WARM_BYTES = 8 << 20
"""A worker reads at most this much before its part (see `_warm_start`)."""
REPORT_SECONDS = 0.25
"""While workers scan, how often the bytes they have read are reported (see `scan_parallel`)."""
PIPE_READ_SIZE = 1 << 20


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parallel_plan(paths: list[str], jobs: int) -> dict[str, list[tuple[int, int]]]:
    """The byte ranges to scan in workers, by path: each big file split, each other plain file whole;
    empty when the plain files together are too small to repay the workers (with jobs < 2: see
    `_one_worker_plan`)."""
    if len(paths) != len(set(paths)):
        return {}  # a path given twice is read twice, in order, as one source: the plain loop does that
    if jobs < 2:
        return _one_worker_plan(paths)
    sizes = {path: size for path in paths if (size := _plain_size(path)) > 0}
    if sum(sizes.values()) < 2 * MIN_PART_BYTES or not hasattr(os, "fork"):
        return {}
    plan = {
        path: split_points(path, jobs) if size >= 2 * MIN_PART_BYTES else [(0, size)] for path, size in sizes.items()
    }
    if sum(map(len, plan.values())) < 2 and len(plan) == len(paths):
        # One part and nothing else to read (one 200 MB progress-bar line has no line start to split
        # at): a worker would add its start and the merge to the same scan.
        return {}
    return plan


def _one_worker_plan(paths: list[str]) -> dict[str, list[tuple[int, int]]]:
    """On one core, a big file given alone is still scanned in a worker: the worker maps it (see
    `triage.mapped`) where this process would copy each read (2-9% faster on the bench logs), and a
    worker that dies costs the scan one line, not what it found. Not a file with no line start near
    its middle (one long line, whose pieces a worker would copy out of the map to join them), nor
    several files (this process keeps what its table learnt of one for the next)."""
    if len(paths) != 1 or not can_map() or not hasattr(os, "fork"):
        return {}
    size = _plain_size(paths[0])
    if size < 2 * MIN_PART_BYTES or len(split_points(paths[0], 2)) < 2:
        return {}
    return {paths[0]: [(0, size)]}


def _plain_size(path: str) -> int:
    """The size of a regular, uncompressed file that workers may read at any offset (0: not one)."""
    if path == "-":  # no random access into stdin
        return 0
    try:
        size = Path(path).stat().st_size
    except OSError:
        return 0
    # Compressed streams, binary data and UTF-16 are read in this process, which decompresses, names or
    # re-encodes them (see `sources.read_stream`); a FIFO (size 0) must not be opened here: that would
    # take its first bytes from the scan.
    return size if size and not read_in_one_pass(path) else 0


def split_points(path: str, jobs: int) -> list[tuple[int, int]]:
    """Byte ranges that each start at a line start and together cover the file."""
    size = os.path.getsize(path)
    parts = max(1, min(jobs, size // MIN_PART_BYTES))
    starts = [0]
    with open(path, "rb") as handle:
        for number in range(1, parts):
            start = _next_line_start(handle, number * size // parts, size)
            if starts[-1] < start < size:  # none near this point: its part joins the one before
                starts.append(start)
    return list(zip(starts, starts[1:] + [size]))


def _next_line_start(handle: BinaryIO, offset: int, size: int) -> int:
    """The first line start after `offset`, within SPLIT_SEARCH_BYTES of it (`size` when none): the
    search reads a bounded block at a time, and stops where a line that long would keep its part
    from being worth splitting off (one 200 MB progress-bar line would be read to its end)."""
    handle.seek(offset)
    searched = 0
    while searched < SPLIT_SEARCH_BYTES and (block := handle.read(SEEK_READ_SIZE)):
        newline = block.find(b"\n")
        if newline >= 0:
            return offset + searched + newline + 1
        searched += len(block)
    return size


def _scan_range(
    parent: Scanner, path: str, start: int, stop: int, source: str, read: SharedCount | None = None
) -> tuple[ScanPart, str | None]:
    """A worker's scan of path[start:stop], and the one-line error that cut it short, if any; the
    bytes scanned so far are written to `read` as the scan goes."""
    scanner = Scanner(parent.kb, prefilter=parent.prefilter)
    error = None
    done = 0
    try:
        with open(path, "rb") as handle:
            warm = _warm_start(handle, start)
            for block, begin, end in _windows(handle, warm, start - warm):
                scanner.feed(block, source, start=begin, end=end)
            if warm < start:
                scanner.forget_found(source)
            for block, begin, end in _windows(handle, start, stop - start):
                scanner.feed(block, source, start=begin, end=end)
                done += end - begin
                if read is not None:
                    read.set(done)
    except OSError as exc:  # what was read before the fault still counts
        error = f"{path}: {exc.strerror or exc}"
    scanner.finish(source)
    return scanner.part(), error


def _warm_start(handle: BinaryIO, start: int) -> int:
    """Where a worker starts reading, before its part (which starts at a line start): CAUSE_WINDOW
    lines back, as far as a cause's line may be from an own line of its part and still count, or as
    far as WARM_BYTES reach (at a line start; `start` where none is there)."""
    low = max(0, start - WARM_BYTES)
    found, at = 0, start
    while at > low:
        handle.seek(max(low, at - SEEK_READ_SIZE))
        block = handle.read(at - max(low, at - SEEK_READ_SIZE))
        at -= len(block)
        end = len(block) - 1 if at + len(block) == start else len(block)  # past the part's own newline
        while (newline := block.rfind(b"\n", 0, end)) >= 0:
            found, end = found + 1, newline
            if found == CAUSE_WINDOW:
                return at + newline + 1
    return 0 if low == 0 else _next_line_start(handle, low - 1, start)  # low itself, if a line starts there


def _windows(handle: BinaryIO, start: int, limit: int) -> Iterator[tuple[bytes, int, int]]:
    """The part's bytes, window by window (see `triage.mapped`), or read where windows cannot be
    counted: (block, start, end) to feed."""
    windows = (
        mapped_windows(handle, start, limit, CHUNK_SIZE)
        if can_map()
        else read_windows(handle, start, limit, CHUNK_SIZE)
    )
    # A mapped window is not bytes, but has every method of bytes that the scan calls on a block.
    return cast(Iterator[tuple[bytes, int, int]], windows)


class SharedCount:
    """One number in memory shared with forked workers: how many bytes of its part one has scanned."""

    def __init__(self, shared: mmap.mmap, slot: int) -> None:
        self._shared = shared
        self._at = 8 * slot

    def set(self, value: int) -> None:
        self._shared[self._at : self._at + 8] = value.to_bytes(8, "little")

    def get(self) -> int:
        return int.from_bytes(self._shared[self._at : self._at + 8], "little")


Task = tuple[str, int, int, str]
"""A part to scan: path, its byte range, and the source name its lines are reported under."""


def scan_parallel(
    scanner: Scanner,
    plan: dict[str, list[tuple[int, int]]],
    jobs: int,
    progress: Callable[[str, int], None] | None = None,
) -> Iterator[tuple[str, list[str]]]:
    """Scan the planned files in `jobs` workers; yields each path, in the plan's order, once its
    parts are absorbed into `scanner`, with the one-line errors of its parts. While they scan,
    `progress` hears (source name, bytes of it scanned so far) every REPORT_SECONDS.

    Each part is scanned in a process forked for it, which inherits the KB and the prefilter and
    writes back its part, pickled, through a pipe: multiprocessing's pool cost 18 ms of every
    parallel scan's start-up (its import, its threads), and waited forever on a worker that died.
    Each writes how far it has read into memory shared with this process.
    """
    all_tasks = [(path, start, end, display_name(path)) for path, ranges in plan.items() for start, end in ranges]
    shared = mmap.mmap(-1, 8 * len(all_tasks))
    with_counts = [(task, SharedCount(shared, slot)) for slot, task in enumerate(all_tasks)]
    tasks = iter(with_counts)
    report = None if progress is None else partial(_report, progress, with_counts)
    running: deque[tuple[Task, int, int]] = deque()
    try:
        for task, counter in islice(tasks, jobs):
            running.append((task, *_fork(scanner, task, counter)))
        for path, ranges in plan.items():
            errors = []
            for _ in ranges:
                task, pid, pipe = running.popleft()
                part, error = _collect(scanner, task, pid, pipe, report)
                if (following := next(tasks, None)) is not None:
                    running.append((following[0], *_fork(scanner, *following)))
                scanner.absorb(part, display_name(path))
                errors += [error] if error else []
            yield path, errors
    finally:
        for _, pid, pipe in running:  # stopped early (Ctrl-C, an error, a closed generator)
            if pid > 0:
                os.kill(pid, signal.SIGKILL)
                os.close(pipe)
                os.waitpid(pid, 0)
        shared.close()


def _report(progress: Callable[[str, int], None], tasks: list[tuple[Task, SharedCount]]) -> None:
    """Tell `progress` how many bytes of each file the workers have scanned so far."""
    done: dict[str, int] = {}
    for (_, _, _, source), counter in tasks:
        done[source] = done.get(source, 0) + counter.get()
    for source, read in done.items():
        progress(source, read)


def _fork(scanner: Scanner, task: Task, read: SharedCount) -> tuple[int, int]:
    """Start scanning a part in a child process: its pid and the pipe its part will come through;
    (-1, -1) where no process can be started now (a limit on processes or files): the part is then
    scanned here, when its turn comes."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return -1, -1
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return -1, -1
    if pid == 0:  # the child: never returns, and leaves the parent's buffers and exit handlers alone
        code = 1
        try:
            os.close(read_end)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C reaches the parent, which says so
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(_scan_range(scanner, *task, read), out, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(
    scanner: Scanner, task: Task, pid: int, pipe: int, waiting: Callable[[], None] | None = None
) -> tuple[ScanPart, str | None]:
    """A child's part and error; a child that died gives an empty part that still counts its range's
    lines (so that the later parts keep their line numbers) and a one-line error. `waiting` is
    called every REPORT_SECONDS while the child scans."""
    if pid < 0:
        return _scan_range(scanner, *task)
    data = read_pipe(pipe, waiting)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code == 0 and data:
        part: tuple[ScanPart, str | None] = pickle.loads(data)
        return part
    path, start, stop, _ = task
    how = _death(-code) if code < 0 else f"exit code {code}"
    empty = replace(Scanner(scanner.kb, prefilter=scanner.prefilter).part(), lines=_lines_in(path, start, stop))
    return empty, f"{path}: the worker scanning bytes {start}-{stop} died ({how}); those lines were not scanned"


def _death(number: int) -> str:
    """How a worker killed by this signal died, in words."""
    if number == signal.SIGBUS:
        # A mapped page the file no longer holds (see `triage.mapped`).
        return f"killed by signal {number}, SIGBUS: the file was cut short while it was read, by a log rotation?"
    return f"killed by signal {number}"


def read_pipe(pipe: int, waiting: Callable[[], None] | None) -> bytes:
    """All that comes through a pipe until its writer closes it (then the pipe is closed here too);
    `waiting` is called each time REPORT_SECONDS pass with nothing to read."""
    chunks: list[bytes] = []
    try:
        while True:
            if waiting is not None and not select.select([pipe], [], [], REPORT_SECONDS)[0]:
                waiting()
                continue
            chunk = os.read(pipe, PIPE_READ_SIZE)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(pipe)


def _lines_in(path: str, start: int, stop: int) -> int:
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            return sum(
                chunk.count(b"\n", 0, end) for chunk, end in reads_to_line_ends(handle, stop - start, CHUNK_SIZE)
            )
    except OSError:
        return 0
