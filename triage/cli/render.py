"""Human output of a scan, with rich: the likeliest cause in full, one line for each other.

The pieces the TUI draws too (fixes, verdicts, one-line text) are in triage.render.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.text import Text

from triage.engine.error_lines import message_of
from triage.engine.values import human_size
from triage.render.layout import Hanging, OneLine, whole_line
from triage.render.words import plural
from triage.render.parts import (
    INCONCLUSIVE,
    SEVERITY_STYLE,
    confidence_bar,
    context_text,
    fix_renderable,
    probe_device,
    probe_messages,
    probe_verdict,
    status_note,
    where_text,
)
from triage.results import Diagnosis, ScanResult

PIPED_WIDTH = 80
"""Width when stdout is no terminal (and COLUMNS is unset): what a pasted issue or CI log shows."""
INDENT = 3
BRIEF_EVIDENCE = 2
BRIEF_FIXES = 3


def make_console(file: IO[str] | None = None) -> Console:
    """A console as wide as the terminal, 80 columns when piped; rich itself honours NO_COLOR."""
    stream = file or sys.stdout
    # rich would otherwise take the width of whichever of stdin/stderr is still a terminal.
    piped = not stream.isatty() and not os.environ.get("COLUMNS")
    return Console(file=stream, width=PIPED_WIDTH if piped else None, highlight=False)


def _extracted_text(diagnosis: Diagnosis) -> str:
    parts = []
    for name, value in diagnosis.extracted.items():
        shown = human_size(value) if isinstance(value, int) and name.endswith(("bytes", "size")) else value
        parts.append(f"{name}={shown}")
    return ", ".join(parts)


def _evidence(diagnosis: Diagnosis, *, full: bool) -> Iterable[RenderableType]:
    shown = diagnosis.evidence if full else diagnosis.evidence[:BRIEF_EVIDENCE]
    count = diagnosis.evidence_count
    yield Text(
        "evidence:" if len(shown) >= count else f"evidence ({len(shown)} of {plural(count, 'line')}):", style="bold"
    )
    for line in shown:
        yield Hanging(OneLine(Text(f"{line.source}:{line.line}", style="cyan"), keep_end=True), indent=2)
        yield Hanging(OneLine(Text(line.text if full else _message_first(line.text))), indent=4)


_LEADING_DIRECTORIES = re.compile(r"^(?:[A-Za-z]:)?[/\\]?(?:[^\s/\\:]+[/\\]){2,}(?=[^\s/\\:]+:\d)")
"""The directories of a compiler's or warning's `path/to/file.hpp:232:34: error: ...` location."""


def _message_first(text: str) -> str:
    """The line from its message on: launcher and logger prefixes (`(EngineCore_DP0 pid=13770) ERROR
    02-25 03:11:49 [core.py:866] `) and a location's directories (a build's absolute paths) would take
    the one line that the brief output gives it."""
    message = message_of(text)
    short = _LEADING_DIRECTORIES.sub("…/", message)
    if short != message:
        return short
    return text if message == text.strip() else f"… {message}"


def diagnosis_renderable(position: int, diagnosis: Diagnosis, *, full: bool = False) -> Group:
    """One diagnosis. Brief: title, evidence, the likeliest cause, fixes; `full` adds the rest."""
    style = SEVERITY_STYLE.get(diagnosis.severity, "")
    header = Text.assemble(
        (f"{position}. ", "bold"),
        (f"{confidence_bar(diagnosis.confidence)} {diagnosis.confidence:.2f}", style),
        (f"  [{diagnosis.category}] {diagnosis.id}", "dim"),
        ("  guess" if diagnosis.guess else "  family rule" if diagnosis.family else "", "yellow"),
        (f"  {status_note(diagnosis)}" if status_note(diagnosis) else "", "yellow"),
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
        body += [
            Hanging(whole_line(Text(ref.url)) if ref.url else Text(ref.document or ""), "see: ")
            for ref in diagnosis.references
        ]
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
            yield from (
                Hanging(fix_renderable(f"{n}.", fix, full=full, whole=True), indent=2) for n, fix in enumerate(items, 1)
            )
    for note in diagnosis.fix_notes:
        yield Hanging(Text(note, style="dim"), "left out: ")


def one_liner(position: int, diagnosis: Diagnosis) -> OneLine:
    """A diagnosis on one line, cut to the width: the listing of the diagnoses not shown in full."""
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
        findings = "" if verdict.startswith(INCONCLUSIVE) else "; ".join(probe_messages(probe))
        yield Text(
            f"probe {probe.get('probe')} on {probe_device(probe)}: {verdict}. {findings}".rstrip(), style="magenta"
        )


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
        console.print(diagnosis_renderable(position, diagnosis, full=verbose), crop=False)  # whole code lines
        console.print()
    rest = result.diagnoses[len(full) :]
    if rest:
        console.print(f"Also found ({len(rest)} more):", style="bold")
        for position, diagnosis in enumerate(rest, len(full) + 1):
            console.print(one_liner(position, diagnosis))
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
