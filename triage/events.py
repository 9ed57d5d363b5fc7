"""What a growing scan has to say: new diagnoses, and known ones whose meaning changed. Pure.

A live scan re-ranks as lines arrive. Printing the whole ranking each time would bury the news, so
each diagnosis is announced once, and again only when its rank, its role or its most likely cause
changes; a confidence that creeps up with every repeated line is not news.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from triage.results import Diagnosis, ScanResult, to_json

EventKind = Literal["diagnosis", "update", "summary"]


@dataclass(frozen=True)
class Event:
    kind: EventKind
    diagnosis: Diagnosis | None = None
    position: int = 0
    """1-based place of `diagnosis` in the current ranking."""
    was: dict[str, Any] = field(default_factory=dict)
    """For an update: the previous value of each field that changed."""
    result: ScanResult | None = None
    """For a summary: the whole scan."""

    def to_json(self) -> dict[str, Any]:
        """One JSON-lines object: the event kind, then the diagnosis (or, for a summary, the scan)."""
        body = self.result if self.kind == "summary" else self.diagnosis
        data: dict[str, Any] = {"event": self.kind, **(to_json(body) if body else {})}
        if self.was:
            data["was"] = self.was
        return data


def summary_event(result: ScanResult) -> Event:
    return Event("summary", result=result)


def material(diagnosis: Diagnosis) -> dict[str, Any]:
    """The fields whose change is worth an update event."""
    return {
        "rank": diagnosis.rank,
        "role": diagnosis.role,
        "top_cause": diagnosis.causes[0].id if diagnosis.causes else None,
    }


class EventTracker:
    """Remembers what was announced; memory grows with the KB's size, never with the log's."""

    def __init__(self) -> None:
        self._announced: dict[str, dict[str, Any]] = {}

    def events(self, result: ScanResult) -> list[Event]:
        """New diagnoses first (in ranking order), then updates to ones announced before."""
        news: list[Event] = []
        updates: list[Event] = []
        for position, diagnosis in enumerate(result.diagnoses, 1):
            now = material(diagnosis)
            before = self._announced.get(diagnosis.key)
            self._announced[diagnosis.key] = now
            if before is None:
                news.append(Event("diagnosis", diagnosis, position))
            elif before != now:
                was = {name: value for name, value in before.items() if now[name] != value}
                updates.append(Event("update", diagnosis, position, was))
        return news + updates
