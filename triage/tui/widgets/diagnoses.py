"""The ranked causes: one two-line option per diagnosis, with a confidence bar and a category badge."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widgets.option_list import Option

from triage.render.parts import SEVERITY_STYLE, confidence_bar
from triage.results import Diagnosis
from triage.tui.widgets.lists import KeyedList


def diagnosis_prompt(position: int, diagnosis: Diagnosis) -> Group:
    style = SEVERITY_STYLE.get(diagnosis.severity, "")
    scores = Text.assemble(
        (f"{position}. ", "bold"),
        (confidence_bar(diagnosis.confidence, 8), style),
        (f" {diagnosis.confidence:.2f} ", style),
        (f" {diagnosis.category} ", "reverse"),
        no_wrap=True,
        overflow="ellipsis",
    )
    # One line per title keeps every cause two rows high; the detail pane shows the whole title.
    title = Text(f"   {diagnosis.title}", style="bold", no_wrap=True, overflow="ellipsis")
    return Group(scores, title)


class DiagnosisList(KeyedList):
    DEFAULT_CSS = """
    DiagnosisList { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: list[tuple[str, float]] = []

    @property
    def selected_key(self) -> str | None:
        """The `Diagnosis.key` of the highlighted diagnosis."""
        option = self.highlighted_option
        return option.id if option is not None else None

    def show(self, diagnoses: list[Diagnosis]) -> None:
        """Replace the list, keeping the highlighted diagnosis highlighted wherever it moved."""
        shown = [(d.key, d.confidence) for d in diagnoses]
        if shown == self._shown:
            return
        self._shown = shown
        keep = self.selected_key
        self.clear_options()
        self.add_options([Option(diagnosis_prompt(n, d), id=d.key) for n, d in enumerate(diagnoses, 1)])
        keys = [d.key for d in diagnoses]
        if diagnoses:
            self.highlighted = keys.index(keep) if keep in keys else 0
