"""Scan input as it arrives and report each new or changed diagnosis at once.

One path for every live source: `triage tail` feeds it file growth, and a wrapper around a child
process can hand its merged stdout/stderr to `stream_lines`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO, Protocol

from triage.engine.facts import ranked_result
from triage.engine.scanner import Scanner
from triage.events import Event, EventTracker, summary_event

EventHandler = Callable[[Event], None]
READ_SIZE = 64 << 10


class ByteStream(Protocol):
    """What `stream_lines` reads: a pipe, a file, or a job that hands out its output."""

    def read(self, size: int, /) -> bytes: ...


class LiveScan:
    """A Scanner whose growing result is turned into events for `on_event`.

    `feed` and `finish` have the Scanner's signatures, so a follower can feed either.
    """

    def __init__(self, scanner: Scanner, on_event: EventHandler) -> None:
        self.scanner = scanner
        self._on_event = on_event
        self._tracker = EventTracker()
        self._evidence_seen = 0

    def feed(self, data: bytes, source: str) -> None:
        self._publish(self.scanner.feed(data, source))

    def finish(self, source: str) -> None:
        self._publish(self.scanner.finish(source))

    def quiet(self, source: str) -> None:
        """The source has written nothing for a long while (see `Follower`): take its last line as where
        the job stopped, as if it had ended, so that a stall it shows is reported; its next bytes undo it."""
        self.scanner.unclaimed.ended.add(source)
        self._publish(set(), again=True)

    def summary(self) -> Event:
        return summary_event(ranked_result(self.scanner))

    def _publish(self, newly: set[int], *, again: bool = False) -> None:
        # Re-ranking costs far more than matching, so it is redone only when some line matched:
        # a new entry fired, or new evidence may have moved a rank, a role or a top cause.
        seen = self.scanner.matched_lines
        if not (newly or again) and seen == self._evidence_seen:
            return
        self._evidence_seen = seen
        for event in self._tracker.events(ranked_result(self.scanner)):
            self._on_event(event)


def stream_lines(stream: ByteStream, live: LiveScan, source: str, *, echo: BinaryIO | None = None) -> None:
    """Scan `stream` until end of file, reporting through `live` as soon as each chunk arrives.

    For pipes (a child's merged stdout and stderr): `read1` returns what is there instead of
    waiting for a full buffer, so a diagnosis is not held back behind quiet output. `echo`, when
    given, gets every chunk first, so a wrapped job's output still reaches its user.
    """
    read = getattr(stream, "read1", stream.read)
    try:
        while chunk := read(READ_SIZE):
            if echo is not None:
                echo.write(chunk)
                echo.flush()
            live.feed(chunk, source)
    finally:
        live.finish(source)
