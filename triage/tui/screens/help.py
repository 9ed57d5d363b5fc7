"""The help screen: every key, built from the bindings themselves so it cannot drift from them."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "Pick a cause on the left, read it on the right: the log below shows its first evidence line\n"
    "and marks the others; n/N visit them. tab moves between the panes."
)


def key_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    rows = []
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description:
            keys = ", ".join(key.strip() for key in binding.key.split(","))
            rows.append((binding.key_display or keys, binding.tooltip or binding.description))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close help")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; max-width: 100%; height: 90%;
        border: round $accent; border-title-align: center; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, sections: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        table = Table(show_header=False, box=None, padding=(0, 1))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for title, rows in self.sections:
            table.add_row(Text(title, style="underline"), "")
            for keys, description in rows:
                # Text, not markup: keys such as "[" would read as markup tags.
                table.add_row(Text(keys), Text(description))
        scroll = VerticalScroll(Static(INTRO), Static(table))
        scroll.border_title = "triage help (escape closes)"
        yield scroll
