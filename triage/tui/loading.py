"""The app's loader: the KB, then the logs, then (with --follow) what they gain, posted as messages.

It runs in a thread worker and never touches widgets: the app's message handlers own every state
change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message

from triage.engine.facts import ranked_result
from triage.engine.scanner import Scanner
from triage.engine.setup import load_reported_kb
from triage.tui.messages import LogLinesRead, ProblemFound, ScanUpdated
from triage.tui.reading import DisplaySink, LogBatch, LogReader

POLL_SECONDS = 0.25
"""How often followed files are checked for new lines."""


class LogLoader:
    def __init__(
        self,
        paths: list[str],
        post: Callable[[Message], object],
        *,
        kb_dirs: list[str],
        include_shipped_kb: bool,
        follow: bool,
        stdin_data: bytes | None,
    ) -> None:
        self._paths = paths
        self._post = post
        self._kb_dirs = kb_dirs
        self._include_shipped_kb = include_shipped_kb
        self._follow = follow
        self._stdin_data = stdin_data
        self._stopped = threading.Event()
        self._ranked_at = 0
        """Matched lines when the ranking was last posted."""

    def stop(self) -> None:
        """Stop reading (the app quits); a loader waiting between polls wakes at once."""
        self._stopped.set()

    def run(self, cancelled: Callable[[], bool]) -> None:
        """Load and read until done, or, when following, until stopped or `cancelled`."""

        def stop() -> bool:
            return cancelled() or self._stopped.is_set()

        kb = load_reported_kb(self._kb_dirs, include_shipped=self._include_shipped_kb, warn=self._problem)
        scanner = Scanner(kb)
        sink = DisplaySink(
            scanner,
            lambda batch: self._lines_read(batch, scanner),
            on_quiet=lambda: self._post(ScanUpdated(ranked_result(scanner), done=False)),
        )
        reader = LogReader(sink, self._paths, follow=self._follow, notify=self._problem, stdin_data=self._stdin_data)
        try:
            reader.read_all(stop)
            if stop():
                return  # quitting while a big log is read: don't rank what is left half-read
            self._post(ScanUpdated(ranked_result(scanner), done=True))
            while reader.following and not stop():
                if not reader.poll():
                    self._stopped.wait(POLL_SECONDS)
        finally:
            reader.close()

    def _problem(self, text: str) -> None:
        self._post(ProblemFound(text))

    def _lines_read(self, batch: LogBatch, scanner: Scanner) -> None:
        self._post(LogLinesRead(batch))
        # Re-ranking costs far more than matching: only when some line matched since the last time.
        if scanner.matched_lines != self._ranked_at:
            self._ranked_at = scanner.matched_lines
            self._post(ScanUpdated(ranked_result(scanner), done=False))
