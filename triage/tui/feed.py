"""Read log sources into a scanner and cut them into numbered lines for display.

No textual here: the app runs a `LogFeed` in a thread worker and turns its batches into messages.
Line numbers are counted the way the scanner counts them, so evidence (source, line) pairs
point at the displayed lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from triage.engine.normalize import decode_line
from triage.engine.scanner import Scanner
from triage.sources import SourceError, display_name, is_gzip, read_chunks

CHUNK_SIZE = 1 << 20
"""Smaller than the CLI's chunks so that the first screen of a big log shows up quickly."""


@dataclass(frozen=True)
class LogBatch:
    source: str
    first_line: int
    lines: list[str]


@dataclass
class _Source:
    path: str
    name: str
    pending: bytes = b""
    lines: int = 0
    offset: int = 0
    handle: BinaryIO | None = field(default=None, repr=False)
    followable: bool = False


class LogFeed:
    """Feeds `paths` to `scanner`; `stdin_data` stands in for '-' (read before the UI took the terminal)."""

    def __init__(self, scanner: Scanner, paths: list[str], *, stdin_data: bytes | None = None) -> None:
        self.scanner = scanner
        self.stdin_data = stdin_data
        self._sources = [_Source(path=path, name=display_name(path)) for path in paths]

    def read_all(self, *, follow: bool) -> Iterator[LogBatch | SourceError]:
        """Everything the sources hold now; with `follow`, plain files stay open for `poll`."""
        for source in self._sources:
            try:
                for chunk in self._initial_chunks(source):
                    source.offset += len(chunk)
                    yield from self._feed(source, chunk)
            except SourceError as exc:
                self.scanner.note_error(str(exc))
                yield exc
                continue
            source.followable = follow and source.path != "-" and not is_gzip(source.path)
            if not source.followable:
                yield from self._finish(source)

    def poll(self) -> Iterator[LogBatch | SourceError]:
        """What followed files gained since the last read."""
        for source in self._sources:
            if not source.followable:
                continue
            try:
                on_disk = Path(source.path).stat()
                if source.handle is not None and os.fstat(source.handle.fileno()).st_ino != on_disk.st_ino:
                    # Rotated: the path names a new file now; read that one from its start.
                    source.handle.close()
                    source.handle, source.offset = None, 0
                if source.handle is None:
                    source.handle = open(source.path, "rb")  # noqa: SIM115 - kept open while following
                    source.handle.seek(source.offset)
                if on_disk.st_size < source.offset:
                    # Truncated in place: start again from its beginning.
                    source.handle.seek(0)
                    source.offset = 0
                while chunk := source.handle.read(CHUNK_SIZE):
                    source.offset += len(chunk)
                    yield from self._feed(source, chunk)
            except OSError as exc:
                source.followable = False
                if source.handle is not None:
                    source.handle.close()
                    source.handle = None
                error = SourceError(f"{source.path}: {exc.strerror or exc}")
                self.scanner.note_error(str(error))
                yield error

    def close(self) -> None:
        for source in self._sources:
            if source.handle is not None:
                source.handle.close()
                source.handle = None

    def _initial_chunks(self, source: _Source) -> Iterator[bytes]:
        if source.path == "-":
            if self.stdin_data:
                yield self.stdin_data
            return
        yield from read_chunks(source.path, CHUNK_SIZE)

    def _feed(self, source: _Source, chunk: bytes) -> Iterator[LogBatch]:
        self.scanner.feed(chunk, source.name)
        parts = (source.pending + chunk).split(b"\n")
        source.pending = parts.pop()
        if parts:
            yield self._batch(source, parts)

    def _finish(self, source: _Source) -> Iterator[LogBatch]:
        self.scanner.finish(source.name)
        if source.pending:
            pending, source.pending = source.pending, b""
            yield self._batch(source, [pending])

    @staticmethod
    def _batch(source: _Source, raw_lines: list[bytes]) -> LogBatch:
        batch = LogBatch(source.name, source.lines + 1, [decode_line(raw) for raw in raw_lines])
        source.lines += len(raw_lines)
        return batch
