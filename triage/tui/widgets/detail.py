"""The selected diagnosis in full: summary, causes, probe results, evidence, fixes, references."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from triage.render.parts import (
    confidence_bar,
    context_text,
    fix_renderable,
    probe_verdict,
    status_note,
    where_text,
)
from triage.results import Diagnosis, EvidenceLine, FixResult
from triage.tui.messages import EvidenceChosen
from triage.tui.widgets.lists import KeyedList


class EvidenceList(KeyedList):
    """Evidence lines of the diagnosis; enter shows the line in the log."""

    DEFAULT_CSS = """
    EvidenceList, EvidenceList:focus { height: auto; max-height: 8; border: none; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.evidence: list[EvidenceLine] = []

    def show(self, evidence: list[EvidenceLine]) -> None:
        self.evidence = evidence
        self.clear_options()
        self.add_options(
            [
                Option(Text.assemble((f"{e.source}:{e.line} ", "cyan"), e.text), id=str(i))
                for i, e in enumerate(evidence)
            ]
        )
        if evidence:
            self.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(EvidenceChosen(self.evidence[event.option_index]))


class DetailPane(VerticalScroll):
    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    DetailPane > .section { margin-top: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.diagnosis: Diagnosis | None = None
        self.context: dict[str, Any] = {}
        self.fix_index = 0
        self.dark = True
        """Syntax colours follow the app theme."""

    def compose(self) -> ComposeResult:
        yield Static(id="detail-head")
        yield Static(Text("Evidence (enter: show in log)", style="bold"), classes="section", id="evidence-title")
        yield EvidenceList(id="evidence")
        yield Static(id="detail-body", classes="section")

    @property
    def selected_fix(self) -> FixResult | None:
        if self.diagnosis is None or not self.diagnosis.fixes:
            return None
        return self.diagnosis.fixes[self.fix_index]

    def show(
        self,
        diagnosis: Diagnosis | None,
        probe_results: list[dict[str, Any]],
        *,
        empty: str = "",
        context: dict[str, Any] | None = None,
    ) -> None:
        """Show `diagnosis` with the results of its probes and the job the log shows (`context`);
        `empty` is shown when there is none."""
        self.context = context or {}
        if diagnosis is None or self.diagnosis is None or diagnosis.id != self.diagnosis.id:
            self.fix_index = 0
        evidence_changed = diagnosis is None or self.diagnosis is None or diagnosis.evidence != self.diagnosis.evidence
        self.diagnosis = diagnosis
        self.query_one("#evidence-title").display = diagnosis is not None
        if diagnosis is None:
            self.query_one("#detail-head", Static).update(Text(empty, style="italic"))
            self.query_one("#detail-body", Static).update("")
            self.query_one(EvidenceList).show([])
            return
        self.query_one("#detail-head", Static).update(self._head(diagnosis, probe_results))
        if evidence_changed:
            self.query_one(EvidenceList).show(diagnosis.evidence)
        self.query_one("#detail-body", Static).update(self._body(diagnosis))

    def select_fix(self, delta: int) -> None:
        if self.diagnosis is not None and self.diagnosis.fixes:
            self.fix_index = (self.fix_index + delta) % len(self.diagnosis.fixes)
            self.query_one("#detail-body", Static).update(self._body(self.diagnosis))

    def _head(self, d: Diagnosis, probe_results: list[dict[str, Any]]) -> RenderableType:
        kind = " · guess" if d.guess else " · family rule" if d.family else ""
        parts: list[RenderableType] = [
            Text(d.title, style="bold"),
            Text(f"{d.id} · {d.category} · {d.severity} · confidence {d.confidence:.2f}{kind}", style="dim"),
        ]
        if context_text(self.context):
            parts.append(Text(f"job: {context_text(self.context)}", style="cyan"))
        if status_note(d):
            parts.append(Text(status_note(d), style="yellow"))
        if where_text(d):
            parts.append(Text(where_text(d), style="magenta"))
        if d.summary:
            parts += [Text(""), Text(d.summary.strip())]
        if d.causes:
            parts += [Text(""), Text("Causes", style="bold")]
            parts += [Text(f"{confidence_bar(c.probability, 6)} {c.probability:4.0%} {c.title}") for c in d.causes]
        if d.probes:
            parts += [Text(""), Text.assemble(("Probes ", "bold"), (f"{', '.join(d.probes)} (p: run)", "dim"))]
            for result in probe_results:
                if result.get("probe") in d.probes:
                    parts.append(Text(f"  {result.get('probe')}: {probe_verdict(result)}", style="bold"))
                    parts += [
                        Text(f"    {f.get('message', '')}") for f in result.get("findings") or [] if isinstance(f, dict)
                    ]
            parts += [Text(f"  {note}", style="green") for note in d.probe_notes]
        return Group(*parts)

    def _body(self, d: Diagnosis) -> RenderableType:
        parts: list[RenderableType] = []
        if d.fixes:
            parts.append(
                Text.assemble(("Fixes ", "bold"), ("([ ]: choose, c: copy; diagnostics are ways to confirm)", "dim"))
            )
            parts += [self._fix(n, fix, selected=n == self.fix_index) for n, fix in enumerate(d.fixes)]
        parts += [Text(f"left out: {note}", style="dim") for note in d.fix_notes]
        if d.references:
            parts += [Text(""), Text("References", style="bold")]
            parts += [Text(f"{ref.url or ref.document}  {ref.supports}") for ref in d.references]
        if d.related:
            parts += [Text(""), Text.assemble(("Related entries ", "bold"), ", ".join(d.related))]
        parts += [Text(""), Text(f"Entry: {d.id}", style="dim")]
        return Group(*parts)

    def _fix(self, number: int, fix: FixResult, *, selected: bool) -> RenderableType:
        marker = "▶ " if selected else "  "
        return fix_renderable(
            f"{marker}{number + 1}.",
            fix,
            theme="ansi_dark" if self.dark else "ansi_light",
            title_style="reverse bold" if selected else "bold",
        )
