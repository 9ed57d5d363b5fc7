"""The search prompt under the log, shown by `/`."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

from triage.tui.messages import SearchClosed


class SearchBar(Input):
    BINDINGS = [Binding("escape", "close", "Cancel search", show=False)]

    DEFAULT_CSS = """
    SearchBar { dock: bottom; display: none; height: 1; border: none; padding: 0 1; }
    SearchBar.open { display: block; }
    """

    def open(self) -> None:
        self.add_class("open")
        self.value = ""
        self.focus()

    def close(self) -> None:
        self.remove_class("open")

    def action_close(self) -> None:
        self.post_message(SearchClosed())
