"""The option list both panes use: arrows and, as in the log, j/k move the highlight."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import OptionList


class KeyedList(OptionList):
    BINDINGS = [
        Binding("j", "cursor_down", "Next item", show=False),
        Binding("k", "cursor_up", "Previous item", show=False),
    ]
