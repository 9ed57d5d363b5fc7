"""Rich building blocks for one-line and hanging text, shared by the CLI and the TUI.

Prose wraps under its own indent; log lines and paths never wrap: they are cut to the width with
an ellipsis, so that an evidence line stays one line. Code never wraps either (a wrapped line is no
longer valid code): the TUI cuts it with an ellipsis (its copy key gives the whole fix), the CLI
prints each line whole, past the width where it must, for a command is only worth showing if it can
be copied and pasted.
"""

from __future__ import annotations

from rich.cells import get_character_cell_size
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

ELLIPSIS = "…"


def _chars_within(text: str, cells: int) -> int:
    """How many leading characters of `text` fit in `cells` columns (wide CJK characters count 2)."""
    used = 0
    for index, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > cells:
            return index
    return len(text)


class OneLine:
    """Text that never wraps: cut to the width it is given, with `…`.

    `at_word` ends the cut on a word boundary when one is near (prose, log lines); code is cut at
    the width. With `keep_end` the start is cut instead: `…/long/path/train.log:56` keeps the line.
    """

    def __init__(self, text: Text, *, at_word: bool = True, keep_end: bool = False) -> None:
        self.text = text
        self.at_word = at_word
        self.keep_end = keep_end

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        text = self.text.copy()
        if text.cell_len > width:
            text = self._cut_start(text, width) if self.keep_end else self._cut(text, width)
        text.no_wrap = True
        text.overflow = "crop"
        yield text

    def _cut(self, text: Text, width: int) -> Text:
        keep = _chars_within(text.plain, width - 1)
        word_end = text.plain.rfind(" ", 0, keep + 1)
        if self.at_word and word_end > keep // 2:
            keep = word_end
        cut = text[:keep]
        cut.rstrip()
        cut.append(ELLIPSIS, style="dim")
        return cut

    @staticmethod
    def _cut_start(text: Text, width: int) -> Text:
        plain = text.plain
        drop = len(plain) - _chars_within(plain[::-1], width - 1)
        return Text.assemble((ELLIPSIS, "dim"), text[drop:])


class Hanging:
    """`body` to the right of `label` (or of `indent` blanks), wrapped lines keeping that indent.

    Unlike rich's Padding it adds no trailing blanks, which piped output would carry.
    """

    def __init__(self, body: RenderableType, label: Text | str = "", *, indent: int | None = None) -> None:
        self.body = body
        self.label = label if isinstance(label, Text) else Text(label)
        self.indent = indent if indent is not None else self.label.cell_len

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update_width(max(1, options.max_width - self.indent))
        blank = Segment(" " * self.indent)
        # Split, not cropped to the width: what fits already fits, and a whole code line must stay whole.
        for number, line in enumerate(Segment.split_lines(console.render(self.body, inner))):
            if number == 0 and self.label:
                yield from self.label.render(console)
                yield Segment(" " * (self.indent - self.label.cell_len))
            else:
                yield blank
            yield from line
            yield Segment.line()


class CodeBlock:
    """Highlighted code, one row per line, never wrapped: a wrapped line is no longer valid code.
    A line wider than the width is cut with an ellipsis, or with `whole` printed past the width.

    Highlighting waits for the console: where it shows no colour (piped, NO_COLOR) the code is
    plain text, and pygments, whose lexers compile a hundred regexes (a tenth of a second of every
    piped scan that shows a fix), is never loaded.
    """

    def __init__(self, code: str, language: str, theme: str, *, whole: bool = False) -> None:
        self.code = code.rstrip()
        self.language = language
        self.theme = theme
        self.whole = whole

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if console.color_system is None:
            text = Text(self.code)
        else:
            from rich.syntax import Syntax

            text = Syntax(self.code, self.language, theme=self.theme).highlight(self.code)
        lines = text.split("\n")
        yield Group(
            *(whole_line(line) for line in lines) if self.whole else (OneLine(line, at_word=False) for line in lines)
        )


def whole_line(text: Text) -> Text:
    """Text shown whole on one row, past the width if it must be: a command or URL to copy."""
    text = text.copy()
    text.no_wrap, text.overflow = True, "ignore"
    return text
