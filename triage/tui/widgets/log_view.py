"""The log: every line read, matched lines highlighted, with a cursor, search and a matched-only filter.

A line-API ScrollView renders only the rows on screen, so a log of a million lines costs no more
to draw than one of twenty.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from triage.tui.reading import LogBatch

MAX_LINES = 200_000
"""Lines kept for display; in follow mode the oldest go first, the scanner keeps its own state."""
MAX_SHOWN_CHARS = 2_000

LineKey = tuple[str, int]
"""(source, line number): how evidence points at a line."""


@dataclass(frozen=True, slots=True)
class LogLine:
    source: str
    number: int
    text: str

    @property
    def key(self) -> LineKey:
        return (self.source, self.number)


class LogView(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Line up", show=False, key_display="up, k"),
        Binding("down,j", "cursor(1)", "Line down", show=False, key_display="down, j"),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(False)", "First line", show=False),
        Binding("end", "edge(True)", "Last line", show=False),
        Binding("m", "next_match", "Next match", show=False, tooltip="Next matched line below the cursor"),
        Binding(
            "escape",
            "clear_search",
            "Clear search",
            show=False,
            tooltip="Forget the search: n/N go back to evidence lines",
        ),
    ]

    COMPONENT_CLASSES = {
        "log-view--gutter",
        "log-view--matched",
        "log-view--evidence",
        "log-view--cursor",
        "log-view--search",
    }

    DEFAULT_CSS = """
    LogView { background: $surface; }
    LogView > .log-view--gutter { color: $text-muted; }
    LogView > .log-view--matched { background: $error 30%; text-style: bold; }
    LogView > .log-view--evidence { background: $error 60%; text-style: bold underline; }
    LogView > .log-view--cursor { background: $accent 50%; }
    LogView > .log-view--search { background: $warning; color: $background; }
    """

    filtered: reactive[bool] = reactive(False)
    """Show only matched lines."""
    search_term: reactive[str] = reactive("")

    def __init__(self, *, show_source: bool = False, follow: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_source = show_source
        self.follow = follow
        """Keep the cursor on the newest line while it is at the end."""
        self.lines: list[LogLine] = []
        self.matched: set[LineKey] = set()
        self.evidence: list[LineKey] = []
        """The selected cause's evidence lines, in log order: marked more strongly, visited by n/N."""
        self.cursor = 0
        """Row in the visible lines (all lines, or matched ones when filtered)."""
        self._visible: list[int] | None = None
        """Indices into `lines` when filtered; None shows every line."""
        self._gutter_width = 4

    # -- content -----------------------------------------------------------------------------------

    def add_batch(self, batch: LogBatch) -> None:
        at_end = self.cursor >= self.visible_count - 1
        self.lines += [LogLine(batch.source, batch.first_line + i, text) for i, text in enumerate(batch.lines)]
        if len(self.lines) > MAX_LINES:
            # Drop a tenth at once, so that a steady stream does not shift the list on every batch.
            dropped = len(self.lines) - MAX_LINES + MAX_LINES // 10
            del self.lines[:dropped]
            if not self.filtered:
                self.cursor = max(0, self.cursor - dropped)
        self._gutter_width = max(self._gutter_width, len(str(batch.first_line + len(batch.lines))))
        self._refresh_view()
        if at_end and self.follow:
            self.move_cursor(self.visible_count - 1)

    def set_matched(self, matched: set[LineKey]) -> None:
        if matched != self.matched:
            self.matched = matched
            self._refresh_view()

    def show_evidence(self, evidence: list[LineKey], *, jump: bool) -> None:
        """Mark the selected cause's evidence lines; with `jump`, bring the first one into view."""
        self.evidence = evidence
        if jump and evidence:
            self.jump_to(evidence[0])
        self.refresh()

    @property
    def visible_count(self) -> int:
        return len(self.lines) if self._visible is None else len(self._visible)

    def visible_line(self, row: int) -> LogLine:
        return self.lines[row if self._visible is None else self._visible[row]]

    @property
    def current(self) -> LogLine | None:
        return self.visible_line(self.cursor) if self.visible_count else None

    # -- navigation --------------------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        self.cursor = max(0, min(row, self.visible_count - 1))
        self._scroll_to_cursor()
        # The log's height follows its content: lines just added may change it (and how far it
        # can scroll) only at the next layout, so look again then.
        self.call_after_refresh(self._scroll_to_cursor)
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        if self.cursor < self.scroll_y or self.cursor >= self.scroll_y + self.size.height:
            self.scroll_to(y=max(0, self.cursor - self.size.height // 2), animate=False)

    def jump_to(self, key: LineKey) -> bool:
        """Put the cursor on the line `key`; False when it is no longer held."""
        for row in range(self.visible_count):
            if self.visible_line(row).key == key:
                self.move_cursor(row)
                return True
        return False

    def next_evidence(self, *, forward: bool = True) -> bool:
        """Move to the next (or previous) evidence line of the selected cause, wrapping around."""
        rows = {self.visible_line(row).key: row for row in range(self.visible_count)}
        held = sorted(rows[key] for key in self.evidence if key in rows)
        if not held:
            return False
        after = [row for row in held if row > self.cursor] if forward else [row for row in held if row < self.cursor]
        self.move_cursor((after[0] if forward else after[-1]) if after else (held[0] if forward else held[-1]))
        return True

    def search(self, term: str, *, forward: bool = True) -> bool:
        """Move to the next (or previous) visible line containing `term`, wrapping around."""
        self.search_term = term
        needle = term.lower()
        count = self.visible_count
        step = 1 if forward else -1
        for offset in range(1, count + 1):
            row = (self.cursor + step * offset) % count
            if needle in self.visible_line(row).text.lower():
                self.move_cursor(row)
                return True
        return False

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * max(1, self.size.height - 1))

    def action_edge(self, last: bool) -> None:
        self.move_cursor(self.visible_count - 1 if last else 0)

    def action_clear_search(self) -> None:
        self.search_term = ""

    def action_next_match(self) -> None:
        for row in range(self.cursor + 1, self.visible_count):
            if self.visible_line(row).key in self.matched:
                self.move_cursor(row)
                return
        self.app.notify("No matched line below the cursor")

    # -- rendering ---------------------------------------------------------------------------------

    def watch_filtered(self) -> None:
        current = self.current
        self._refresh_view()
        if current is None or not self.jump_to(current.key):
            self.move_cursor(self.cursor)

    def watch_search_term(self) -> None:
        self.refresh()

    def _refresh_view(self) -> None:
        if self.filtered:
            self._visible = [i for i, line in enumerate(self.lines) if line.key in self.matched]
        else:
            self._visible = None
        width = max((len(line.text) for line in self.lines[-1000:]), default=0) + self._gutter_width + 2
        self.virtual_size = Size(min(width, MAX_SHOWN_CHARS), self.visible_count)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        row = round(self.scroll_offset.y) + y
        if row >= self.visible_count:
            return Strip.blank(self.size.width, self.rich_style)
        line = self.visible_line(row)
        base = self.rich_style
        if line.key in self.matched:
            selected = line.key in self.evidence
            base += self.get_component_rich_style("log-view--evidence" if selected else "log-view--matched")
        if row == self.cursor:
            base += self.get_component_rich_style("log-view--cursor")
        prefix = f"{PurePath(line.source).name}:" if self.show_source else ""
        gutter = f"{prefix}{line.number:>{self._gutter_width}} "
        segments = [Segment(gutter, base + self.get_component_rich_style("log-view--gutter"))]
        segments += self._text_segments(line.text[:MAX_SHOWN_CHARS], base)
        strip = Strip(segments).crop(round(self.scroll_offset.x), round(self.scroll_offset.x) + self.size.width)
        return strip.extend_cell_length(self.size.width, base)

    def _text_segments(self, text: str, base: Style) -> list[Segment]:
        folded, needle = text.lower(), self.search_term.lower()
        # lower() may change the length of a few characters; such a line is shown unmarked.
        if not needle or len(folded) != len(text):
            return [Segment(text, base)]
        found = base + self.get_component_rich_style("log-view--search")
        segments: list[Segment] = []
        start = 0
        while (hit := folded.find(needle, start)) >= 0:
            segments += [Segment(text[start:hit], base), Segment(text[hit : hit + len(needle)], found)]
            start = hit + len(needle)
        segments.append(Segment(text[start:], base))
        return segments
