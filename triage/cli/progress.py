"""A light progress line on stderr for scans that take a while (only on a terminal).

Whatever the input's size: a 2 GB log piped in from stdin, or a small one dense with distinct error
lines, can take long enough to look hung. The line appears once a scan has run for a second, says how
much was read and how fast, and, where the inputs' sizes say how much is left, the share done and
about how long is left.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections import deque
from collections.abc import Callable

SHOW_AFTER_SECONDS = 1.0
"""A scan that ends sooner never draws the line: most logs take a fraction of a second."""
REFRESH_SECONDS = 0.25
RATE_SECONDS = 5.0
"""The speed shown, and the time left worked out from it, are those of the last few seconds: a
scan's speed changes as it goes (a stretch of distinct error lines, a worker done early)."""


class ProgressReporter:
    def __init__(self, total: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        """The bytes the scan will read; None where an input's size does not say (stdin, a pipe, a
        compressed file)."""
        self._current: dict[str, int] = {}
        self._clock = clock
        self._started = clock()
        self._last = 0.0
        self._shown = False
        self._recent: deque[tuple[float, int]] = deque([(self._started, 0)])
        """(when, bytes read then) of the lines drawn in the last RATE_SECONDS, and the one before."""

    @classmethod
    def for_paths(cls, paths: list[str]) -> ProgressReporter | None:
        return cls(known_size(paths)) if sys.stderr.isatty() else None

    def update(self, source: str, done: int) -> None:
        """`done` bytes of `source` are read."""
        self._current[source] = done
        now = self._clock()
        elapsed = now - self._started
        if elapsed < SHOW_AFTER_SECONDS or now - self._last < REFRESH_SECONDS:
            return
        self._last = now
        read = sum(self._current.values())
        while len(self._recent) > 1 and self._recent[1][0] <= now - RATE_SECONDS:
            self._recent.popleft()
        then, read_then = self._recent[0]
        self._recent.append((now, read))
        sys.stderr.write(f"\r{progress_line(read, self.total, (read - read_then) / (now - then))}\x1b[K")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def progress_line(read: int, total: int | None, rate: float) -> str:
    """What a scan that has read `read` bytes of `total` (None: not known), lately at `rate` bytes a
    second, says of itself."""
    speed = f" at {rate / (1 << 20):.0f} MiB/s" if rate > 0 else ""
    if not total or read > total:
        return f"triage: scanned {_mib(read)}{speed}"
    left = f", about {_duration((total - read) / rate)} left" if rate > 0 and read < total else ""
    return f"triage: scanned {_mib(read)} of {_mib(total)} ({100 * read // total}%){speed}{left}"


def known_size(paths: list[str]) -> int | None:
    """How many bytes scanning these paths reads, where every one's size on disk says it: None with
    stdin, a pipe or a file read as a stream (compressed, binary, UTF-16). A path that cannot be read
    adds nothing: the scan reports it."""
    from triage.sources import read_in_one_pass

    total = 0
    for path in paths:
        if path == "-":
            return None
        try:
            info = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or read_in_one_pass(path):
            return None
        total += info.st_size
    return total


def _mib(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 100 << 20 else f"{size / (1 << 20):.1f} MiB"


def _duration(seconds: float) -> str:
    return f"{max(1.0, seconds):.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
