"""Human output of a scan, with rich: the likeliest cause in full, one line for each other.

Prose wraps under its own indent; log lines, paths and code never wrap: they are cut to the
width with an ellipsis, so that an evidence line stays one line and code stays valid-looking.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, Any

from rich.cells import get_character_cell_size
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text

from triage.engine.values import human_size
from triage.results import Diagnosis, FixResult, ScanResult

SEVERITY_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
PIPED_WIDTH = 80
"""Width when stdout is no terminal (and COLUMNS is unset): what a pasted issue or CI log shows."""
ELLIPSIS = "…"
INDENT = 3
BRIEF_EVIDENCE = 2
BRIEF_FIXES = 3
INCONCLUSIVE = "inconclusive here"


def plural(count: int, noun: str, many: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def make_console(file: IO[str] | None = None) -> Console:
    """A console as wide as the terminal, 80 columns when piped; rich itself honours NO_COLOR."""
    stream = file or sys.stdout
    # rich would otherwise take the width of whichever of stdin/stderr is still a terminal.
    piped = not stream.isatty() and not os.environ.get("COLUMNS")
    return Console(file=stream, width=PIPED_WIDTH if piped else None, highlight=False)


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
        for number, line in enumerate(console.render_lines(self.body, inner, pad=False)):
            if number == 0 and self.label:
                yield from self.label.render(console)
                yield Segment(" " * (self.indent - self.label.cell_len))
            else:
                yield blank
            yield from line
            yield Segment.line()


def code_block(code: str, language: str, theme: str) -> Group:
    """Highlighted code, one row per line, never wrapped: a wrapped line is no longer valid code."""
    highlighted = Syntax(code, language, theme=theme).highlight(code.rstrip())
    return Group(*(OneLine(line, at_word=False) for line in highlighted.split("\n")))


def confidence_bar(confidence: float, width: int = 10) -> str:
    filled = round(confidence * width)
    return "█" * filled + "░" * (width - filled)


def _extracted_text(diagnosis: Diagnosis) -> str:
    parts = []
    for name, value in diagnosis.extracted.items():
        shown = human_size(value) if isinstance(value, int) and name.endswith(("bytes", "size")) else value
        parts.append(f"{name}={shown}")
    return ", ".join(parts)


def fix_renderable(
    label: str, fix: FixResult, *, theme: str = "ansi_dark", title_style: str = "bold", full: bool = True
) -> Hanging:
    """One fix: its title after `label`, then description, a shell block (env, commands), code before/after.

    Brief (`full=False`): the title, the shell block and the code to write, nothing else.
    Shared by the CLI and the TUI's detail pane (which passes its theme and a selection style).
    """
    parts: list[RenderableType] = [Text(fix.title, style=title_style)]
    if fix.description and full:
        parts.append(Text(" ".join(fix.description.split()), style="dim"))
    shell = [f"export {name}={value}" for name, value in fix.env.items()] + [f"$ {command}" for command in fix.commands]
    if shell:
        parts.append(code_block("\n".join(shell), "bash", theme))
    if fix.code is not None:
        shown = (("before:", fix.code.before), ("after:", fix.code.after)) if full else (("change to:", fix.code.after),)
        for heading, code in shown:
            parts += [Text(heading, style="dim"), code_block(code, fix.code.language, theme)]
    return Hanging(Group(*parts), Text(f"{label} ", style=title_style))


def where_text(diagnosis: Diagnosis) -> str:
    """'rank 3 · root', 'rank 3', 'root' or '': only what the log told."""
    rank = f"rank {diagnosis.rank}" if diagnosis.rank is not None else ""
    return " · ".join(part for part in (rank, diagnosis.role or "") if part)


def _evidence(diagnosis: Diagnosis, *, full: bool) -> Iterable[RenderableType]:
    shown = diagnosis.evidence if full else diagnosis.evidence[:BRIEF_EVIDENCE]
    count = diagnosis.evidence_count
    yield Text("evidence:" if count == len(shown) else f"evidence ({len(shown)} of {plural(count, 'line')}):", style="bold")
    for line in shown:
        yield Hanging(OneLine(Text(f"{line.source}:{line.line}", style="cyan"), keep_end=True), indent=2)
        yield Hanging(OneLine(Text(line.text)), indent=4)


def diagnosis_renderable(position: int, diagnosis: Diagnosis, *, full: bool = False) -> Group:
    """One diagnosis. Brief: title, evidence, the likeliest cause, fixes; `full` adds the rest."""
    style = SEVERITY_STYLE.get(diagnosis.severity, "")
    header = Text.assemble(
        (f"{position}. ", "bold"),
        (f"{confidence_bar(diagnosis.confidence)} {diagnosis.confidence:.2f}", style),
        (f"  [{diagnosis.category}] {diagnosis.id}", "dim"),
        ("  guess" if diagnosis.guess else "  family rule" if diagnosis.family else "", "yellow"),
    )
    body: list[RenderableType] = [Text(diagnosis.title, style="bold")]
    where = where_text(diagnosis)
    if where:
        body.append(Text(where, style="magenta"))
    if full and diagnosis.summary:
        body.append(Text(" ".join(diagnosis.summary.split())))
    body += _evidence(diagnosis, full=full)
    if full and diagnosis.extracted:
        body.append(Text(f"values: {_extracted_text(diagnosis)}", style="dim"))
    causes = diagnosis.causes if full else diagnosis.causes[:1]
    if causes:
        body.append(Text("likely causes:" if full else "likely cause:", style="bold"))
        body += [Hanging(Text(cause.title), f"  {cause.probability:4.0%}  ") for cause in causes]
    if diagnosis.guess:
        body.append(Text(" ".join(diagnosis.summary.split()), style="dim"))
    body += _fixes(diagnosis, full=full)
    if full:
        body += [Hanging(Text(ref.url or ref.document or ""), "see: ") for ref in diagnosis.references]
    body += [Text(f"probe: {note}", style="magenta") for note in diagnosis.probe_notes]
    if diagnosis.probes and not diagnosis.probe_notes:
        body.append(Text(f"confirm with: triage probe run {' '.join(diagnosis.probes)}", style="dim"))
    return Group(OneLine(header), Hanging(Group(*body), indent=INDENT))


def _fixes(diagnosis: Diagnosis, *, full: bool) -> Iterable[RenderableType]:
    """The fixes, then the ways to confirm the cause ("to confirm"), then what was left out and why."""
    fixes = [fix for fix in diagnosis.fixes if fix.kind != "diagnostic"]
    checks = [fix for fix in diagnosis.fixes if fix.kind == "diagnostic"]
    if not full:
        fixes, checks = fixes[:BRIEF_FIXES], checks[: max(0, BRIEF_FIXES - len(fixes))]
    for heading, items in (("fixes:", fixes), ("to confirm:", checks)):
        if items:
            yield Text(heading, style="bold")
            yield from (Hanging(fix_renderable(f"{n}.", fix, full=full), indent=2) for n, fix in enumerate(items, 1))
    for note in diagnosis.fix_notes:
        yield Hanging(Text(note, style="dim"), "left out: ")


def context_text(context: dict[str, Any]) -> str:
    """What the log shows was running, in one line: 'vllm-ascend · torchrun · torch_npu 2.5.1 · Ascend910B2'."""
    versions = context.get("versions") or {}
    parts = [context.get("workload"), context.get("launcher")]
    parts += [f"{name} {versions[name]}" for name in ("torch", "torch_npu", "cann", "driver") if name in versions]
    parts.append(context.get("soc"))
    return " · ".join(str(part) for part in parts if part)


def _one_liner(position: int, diagnosis: Diagnosis) -> OneLine:
    where = where_text(diagnosis)
    return OneLine(
        Text.assemble(
            f"  {position}. {diagnosis.confidence:.2f} ",
            (diagnosis.title, "bold"),
            (f"  [{diagnosis.category}] {diagnosis.id}", "dim"),
                (f"  {where}" if where else "", "magenta"),
        )
    )


def _probe_lines(result: ScanResult) -> Iterable[Text]:
    for probe in result.probes:
        verdict = probe_verdict(probe)
        # An inconclusive verdict already quotes the findings as its reason.
        findings = "" if verdict.startswith(INCONCLUSIVE) else "; ".join(_messages(probe))
        yield Text(f"probe {probe.get('probe')} on {_device(probe)}: {verdict}. {findings}".rstrip(), style="magenta")


def probe_verdict(result: dict[str, Any]) -> str:
    """What a probe result means for the causes, in a few words.

    A probe whose findings neither confirm nor rule out any cause measured nothing that matters
    here (the allocator probe on a CPU): `ok` would read as "all clear", so it says inconclusive.
    """
    status = str(result.get("status", "?"))
    findings = [f for f in result.get("findings") or [] if isinstance(f, dict)]
    if status == "skipped":
        return f"{INCONCLUSIVE}: {result.get('reason') or 'it cannot measure on this machine'}"
    if status != "ok" or any(f.get("confirms") or f.get("rules_out") for f in findings):
        return status + (f": {result['reason']}" if status == "error" and result.get("reason") else "")
    why = "; ".join(_messages(result)) or f"no finding on {_device(result)}"
    return f"{INCONCLUSIVE}: confirms or rules out no cause ({why})"


def _messages(result: dict[str, Any]) -> list[str]:
    return [str(f.get("message", "")) for f in result.get("findings") or [] if isinstance(f, dict)]


def _device(result: dict[str, Any]) -> str:
    device = result.get("device")
    return str(device.get("type", "?")) if isinstance(device, dict) else str(device or "?")


def render_scan(result: ScanResult, console: Console | None = None, *, verbose: bool = False) -> None:
    """The likeliest diagnosis (every diagnosis with `verbose`) in full, one line for each other."""
    console = console or make_console()
    stats = result.stats
    if not result.diagnoses:
        console.print(f"No known failure found in {plural(stats.lines, 'line')} ({stats.seconds:.2f} s).")
        return
    job = context_text(result.context)
    if job:
        console.print(OneLine(Text.assemble(("job: ", "bold"), (job, "cyan"))))
    full = result.diagnoses if verbose else result.diagnoses[:1]
    for position, diagnosis in enumerate(full, 1):
        console.print(diagnosis_renderable(position, diagnosis, full=verbose))
        console.print()
    rest = result.diagnoses[len(full) :]
    if rest:
        console.print(f"Also found ({len(rest)} more):", style="bold")
        for position, diagnosis in enumerate(rest, len(full) + 1):
            console.print(_one_liner(position, diagnosis))
        console.print()
    for line in _probe_lines(result):
        console.print(line)
    if result.root_rank is not None:
        console.print(f"Root rank: {result.root_rank}", style="bold magenta")
    more = "" if verbose else " · --verbose shows more"
    console.print(
        OneLine(
            Text(
                f"{plural(len(result.diagnoses), 'diagnosis', 'diagnoses')} from {plural(stats.lines, 'line')} "
                f"in {stats.seconds:.2f} s{more}",
                style="dim",
            )
        )
    )
