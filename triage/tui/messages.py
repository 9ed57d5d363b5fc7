"""Every message the triage app exchanges: workers post these, handlers on the app own all state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from triage.results import EvidenceLine, ScanResult
from triage.tui.reading import LogBatch


@dataclass
class LogLinesRead(Message):
    """New complete lines of one source."""

    batch: LogBatch


@dataclass
class ScanUpdated(Message):
    """The scanner's ranking after the lines read so far."""

    result: ScanResult
    done: bool
    """True once every source has been read to its current end (followed files go on growing)."""

    def can_replace(self, message: Message) -> bool:
        # Only the latest ranking matters; older ones still queued are stale.
        return isinstance(message, ScanUpdated)


@dataclass
class ProblemFound(Message):
    """A source could not be read (further), or a KB entry was skipped; one line for the user."""

    text: str


@dataclass
class ProbeProgress(Message):
    """A probe is about to run."""

    probe: str
    done: int
    total: int


@dataclass
class ProbesFinished(Message):
    """The probes of one diagnosis ran; `errors` holds one line per probe that could not run."""

    diagnosis_id: str
    results: list[dict[str, Any]]
    errors: list[str]


@dataclass
class EvidenceChosen(Message):
    """The user picked an evidence line: show it in the log."""

    line: EvidenceLine


class SearchClosed(Message):
    """The search prompt was dismissed without searching."""
