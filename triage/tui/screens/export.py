"""Where to write the markdown report: asked, never a silent overwrite."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


def free_path(path: Path) -> Path:
    """`path`, or the first of `name-2.md`, `name-3.md`, ... that does not exist yet."""
    candidate, number = path, 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
        number += 1
    return candidate


class ExportScreen(ModalScreen["Path | None"]):
    """Asks for the report's path (a free one suggested); an existing file needs a second enter."""

    BINDINGS = [Binding("escape", "cancel", "Cancel export")]

    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical {
        width: 76; max-width: 100%; height: auto;
        border: round $accent; background: $panel; padding: 0 1;
    }
    ExportScreen Input { margin: 1 0 0 0; }
    """

    def __init__(self, suggested: Path, what: str) -> None:
        super().__init__()
        self.suggested = suggested
        self.what = what
        self._confirmed: Path | None = None
        """An existing path the user was warned about: a second enter on it replaces the file."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Write the report ({self.what}; already copied) to:")
            yield Input(value=str(self.suggested), id="export-path")
            yield Label("enter: write · escape: cancel", id="export-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            return
        path = Path(event.value.strip()).expanduser()
        if path.exists() and path != self._confirmed:
            self._confirmed = path
            self.query_one("#export-hint", Label).update(f"{path} exists: enter again replaces it, or change the name")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
