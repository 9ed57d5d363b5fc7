"""A light progress line on stderr for long scans (only on a terminal, only for big inputs)."""

from __future__ import annotations

import os
import sys
import time

MIN_BYTES_FOR_PROGRESS = 64 << 20
REFRESH_SECONDS = 0.25


class ProgressReporter:
    def __init__(self, total: int) -> None:
        self.total = total
        self._done_before: dict[str, int] = {}
        self._current: dict[str, int] = {}
        self._started = time.monotonic()
        self._last = 0.0
        self._shown = False

    @classmethod
    def for_paths(cls, paths: list[str]) -> ProgressReporter | None:
        if not sys.stderr.isatty():
            return None
        total = 0
        for path in paths:
            try:
                total += os.path.getsize(path) if path != "-" else 0
            except OSError:
                continue
        return cls(total) if total >= MIN_BYTES_FOR_PROGRESS else None

    def update(self, source: str, done: int) -> None:
        self._current[source] = done
        now = time.monotonic()
        if now - self._last < REFRESH_SECONDS:
            return
        self._last = now
        read = sum(self._current.values())
        elapsed = max(now - self._started, 1e-6)
        rate = read / elapsed / (1 << 20)
        # Compressed inputs yield more bytes than their size on disk: cap the shown fraction.
        percent = min(100.0, 100.0 * read / self.total) if self.total else 0.0
        sys.stderr.write(f"\rtriage: scanned {read >> 20} MiB ({percent:4.1f}%) at {rate:.0f} MiB/s ")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
