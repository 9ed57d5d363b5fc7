"""One line under the panes: probe progress while probes run, their outcome afterwards."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, LoadingIndicator, ProgressBar


class ProbeStatus(Horizontal):
    DEFAULT_CSS = """
    ProbeStatus { height: 1; display: none; background: $boost; }
    ProbeStatus.shown { display: block; }
    ProbeStatus LoadingIndicator { width: 6; height: 1; min-height: 1; display: none; }
    ProbeStatus ProgressBar { width: auto; display: none; }
    ProbeStatus.running LoadingIndicator, ProbeStatus.running ProgressBar { display: block; }
    ProbeStatus Label { width: 1fr; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield LoadingIndicator()
        yield ProgressBar(show_eta=False)
        yield Label()

    def running(self, text: str, done: int, total: int) -> None:
        self.set_classes("shown running")
        self.query_one(ProgressBar).update(total=total, progress=done)
        self.query_one(Label).update(text)

    def finished(self, text: str) -> None:
        self.set_classes("shown")
        self.query_one(Label).update(text)
