"""Print live-scan events: one compact block per event for people, one JSON object per line for tools."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.text import Text

from triage.cli.render import diagnosis_renderable, make_console, one_liner
from triage.render.words import plural
from triage.events import Event, material
from triage.results import Diagnosis, ScanResult


class EventPrinter:
    """Call it with each event; every event is flushed at once, since a reader is waiting for it."""

    def __init__(
        self, *, as_json: bool, stream: TextIO | None = None, extra: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        """`extra` adds fields to every JSON object (`triage run` adds the job's record)."""
        self._as_json = as_json
        self._extra = extra
        self._stream = stream or sys.stdout
        self._console = make_console(self._stream)

    def __call__(self, event: Event) -> None:
        if self._as_json:
            data = {**event.to_json(), **(self._extra() if self._extra else {})}
            self._stream.write(json.dumps(data, ensure_ascii=False) + "\n")
        elif event.kind == "diagnosis" and event.diagnosis is not None:
            self._console.print(diagnosis_renderable(event.position, event.diagnosis), crop=False)
            self._console.print()
        elif event.kind == "update" and event.diagnosis is not None:
            self._console.print(_update_line(event.diagnosis, event.was))
        elif event.result is not None:
            self._print_summary(event.result)
        self._stream.flush()

    def _print_summary(self, result: ScanResult) -> None:
        stats = result.stats
        if not result.diagnoses:
            self._console.print(f"No known failure found in {stats.lines:,} lines.")
            return
        self._console.print(
            f"Summary: {plural(len(result.diagnoses), 'diagnosis', 'diagnoses')} from {plural(stats.lines, 'line')}",
            style="bold",
        )
        for position, diagnosis in enumerate(result.diagnoses, 1):
            self._console.print(one_liner(position, diagnosis))
        if result.root_rank is not None:
            self._console.print(f"Root rank: {result.root_rank}", style="bold magenta")


def _update_line(diagnosis: Diagnosis, was: dict[str, object]) -> Text:
    now = material(diagnosis)
    changes = ", ".join(f"{name} {was[name]} -> {now[name]}" for name in was)
    return Text.assemble(("update: ", "bold magenta"), (diagnosis.title, "bold"), (f"  [{diagnosis.id}] {changes}", ""))
