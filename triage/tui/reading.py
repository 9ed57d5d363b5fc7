"""Read log sources into a scanner and cut the same bytes into numbered lines for display.

No textual here: the app's loader runs a `LogReader` in a thread worker and turns its batches into
messages. Followed files go through triage.follow, the follower `triage tail` uses, so both faces
see rotation, truncation and globs alike. Line numbers are counted the way the scanner counts
them, so evidence (source, line) pairs point at the displayed lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from triage.engine.normalize import decode_line
from triage.engine.scanner import Scanner
from triage.follow import QUIET_AFTER, Follower
from triage.sources import SourceError, display_name, read_chunks, unfollowable

CHUNK_SIZE = 1 << 20
"""Smaller than the CLI's chunks so that the first screen of a big log shows up quickly."""


@dataclass(frozen=True)
class LogBatch:
    source: str
    first_line: int
    lines: list[str]


class DisplaySink:
    """A follower sink: the scanner gets the bytes, `on_batch` gets their complete lines, numbered."""

    def __init__(
        self, scanner: Scanner, on_batch: Callable[[LogBatch], None], on_quiet: Callable[[], object] = lambda: None
    ) -> None:
        self.scanner = scanner
        self._on_batch = on_batch
        self._on_quiet = on_quiet
        self._pending: dict[str, bytes] = {}
        self._lines: dict[str, int] = {}

    def feed(self, data: bytes, source: str) -> None:
        self.scanner.feed(data, source)
        parts = (self._pending.get(source, b"") + data).split(b"\n")
        self._pending[source] = parts.pop()
        if parts:
            self._emit(source, parts)

    def finish(self, source: str) -> None:
        """The source ended (or was rotated away): its last line counts even without a newline."""
        self.scanner.finish(source)
        pending = self._pending.pop(source, b"")
        if pending:
            self._emit(source, [pending])

    def quiet(self, source: str) -> None:
        """A followed source wrote nothing for a long while: its last line is where the job stopped
        (see `LiveScan.quiet`), until it writes again; `on_quiet` hears it, to rank again."""
        self.scanner.unclaimed.ended.add(source)
        self._on_quiet()

    def _emit(self, source: str, raw_lines: list[bytes]) -> None:
        first = self._lines.get(source, 0) + 1
        self._lines[source] = first - 1 + len(raw_lines)
        self._on_batch(LogBatch(source, first, [decode_line(raw) for raw in raw_lines]))


class LogReader:
    """Reads `paths` into `sink`: each one whole, then, with `follow`, what plain files gain.

    `stdin_data` stands in for '-' (read before the UI took the terminal). Standard input and gzip
    files are read once; with `follow` the others are followed from their start.
    """

    def __init__(
        self,
        sink: DisplaySink,
        paths: list[str],
        *,
        follow: bool,
        notify: Callable[[str], None],
        stdin_data: bytes | None = None,
        quiet_after: float = QUIET_AFTER,
    ) -> None:
        self._sink = sink
        self._notify = notify
        self._stdin_data = stdin_data
        # Compressed and binary files are read once, as `scan` reads them: decompressed, or named and skipped.
        followed = [path for path in paths if follow and path != "-" and unfollowable(path) is None]
        self._once = [path for path in paths if path not in followed]
        self._follower = (
            Follower(followed, sink, from_start=True, notify=notify, quiet_after=quiet_after, on_quiet=sink.quiet)
            if followed
            else None
        )

    @property
    def following(self) -> bool:
        return self._follower is not None

    def read_all(self, stop: Callable[[], bool]) -> None:
        """Everything the sources hold now; `stop` is asked between chunks (quitting while a big log is read)."""
        for path in self._once:
            name = display_name(path)
            try:
                for chunk in self._chunks(path):
                    if stop():
                        return
                    self._sink.feed(chunk, name)
            except SourceError as exc:
                self._sink.scanner.note_error(str(exc))
                self._notify(str(exc))
            self._sink.finish(name)
        # A poll reads a bounded amount per file: the followed files are read up to their current end.
        while self._follower is not None and not stop() and self._follower.poll():
            pass

    def poll(self) -> int:
        """Bytes the followed files gained since the last read."""
        return self._follower.poll() if self._follower is not None else 0

    def close(self) -> None:
        if self._follower is not None:
            self._follower.close()

    def _chunks(self, path: str) -> Iterator[bytes]:
        if path != "-":
            yield from read_chunks(path, CHUNK_SIZE)
        elif self._stdin_data:
            yield self._stdin_data
