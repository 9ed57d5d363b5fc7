"""Human output of a scan, with rich."""

from __future__ import annotations

from rich.console import Console, Group
from rich.padding import Padding
from rich.syntax import Syntax
from rich.text import Text

from triage.engine.values import human_size
from triage.results import Diagnosis, FixResult, ScanResult

SEVERITY_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
MAX_EVIDENCE_SHOWN = 3
MAX_FIXES_SHOWN = 3


def confidence_bar(confidence: float, width: int = 10) -> str:
    filled = round(confidence * width)
    return "█" * filled + "░" * (width - filled)


def _extracted_text(diagnosis: Diagnosis) -> str:
    parts = []
    for name, value in diagnosis.extracted.items():
        shown = human_size(value) if isinstance(value, int) and name.endswith(("bytes", "size")) else value
        parts.append(f"{name}={shown}")
    return ", ".join(parts)


def fix_renderable(label: str, fix: FixResult, *, theme: str = "ansi_dark", title_style: str = "bold") -> Group:
    """One fix: its title after `label`, then description, a shell block (env, commands), code before/after.

    Shared by the CLI and the TUI's detail pane (which passes its theme and a selection style).
    """
    indent = (0, 0, 0, 5)
    parts: list = [Text(f"{label} {fix.title}", style=title_style)]
    if fix.description:
        parts.append(Padding(Text(fix.description.strip(), style="dim"), indent))
    shell = [f"export {name}={value}" for name, value in fix.env.items()] + [f"$ {command}" for command in fix.commands]
    if shell:
        parts.append(Padding(Syntax("\n".join(shell), "bash", theme=theme, word_wrap=True), indent))
    if fix.code is not None:
        for heading, code in (("before:", fix.code.before), ("after:", fix.code.after)):
            parts.append(Padding(Text(heading, style="dim"), indent))
            parts.append(Padding(Syntax(code.rstrip(), fix.code.language, theme=theme, word_wrap=True), indent))
    return Group(*parts)


def diagnosis_renderable(position: int, diagnosis: Diagnosis) -> Group:
    style = SEVERITY_STYLE.get(diagnosis.severity, "")
    header = Text.assemble(
        (f"{position}. ", "bold"),
        (f"{confidence_bar(diagnosis.confidence)} {diagnosis.confidence:.2f} ", style),
        (diagnosis.title, "bold"),
        (f"  [{diagnosis.category}] {diagnosis.id}", "dim"),
    )
    parts: list = [header]
    if diagnosis.role:
        parts.append(Text(f"   rank {diagnosis.rank}: {diagnosis.role}", style="magenta"))
    if diagnosis.summary:
        parts.append(Padding(Text(diagnosis.summary.strip()), (0, 0, 0, 3)))
    noun = "line" if diagnosis.evidence_count == 1 else "lines"
    parts.append(Text(f"   evidence ({diagnosis.evidence_count} {noun}):", style="bold"))
    for line in diagnosis.evidence[:MAX_EVIDENCE_SHOWN]:
        parts.append(Text.assemble(("     ", ""), (f"{line.source}:{line.line}: ", "cyan"), (line.text[:200], "")))
    if diagnosis.extracted:
        parts.append(Text(f"   values: {_extracted_text(diagnosis)}", style="dim"))
    if diagnosis.causes:
        parts.append(Text("   likely causes:", style="bold"))
        for cause in diagnosis.causes:
            parts.append(Text(f"     {cause.probability:4.0%}  {cause.title}"))
    if diagnosis.fixes:
        parts.append(Text("   fixes:", style="bold"))
        parts += [fix_renderable(f"  {n}.", fix) for n, fix in enumerate(diagnosis.fixes[:MAX_FIXES_SHOWN], 1)]
    for note in diagnosis.probe_notes:
        parts.append(Text(f"   probe: {note}", style="magenta"))
    if diagnosis.probes and not diagnosis.probe_notes:
        parts.append(Text(f"   confirm with: triage probe run {' '.join(diagnosis.probes)}", style="dim"))
    return Group(*parts)


def render_scan(result: ScanResult, console: Console | None = None, *, shown: int | None = None) -> None:
    """Print the diagnoses in full, the first `shown` of them; the rest get a one-line list."""
    console = console or Console(highlight=False)
    stats = result.stats
    if not result.diagnoses:
        console.print(f"No known failure found in {stats.lines:,} lines ({stats.seconds:.2f} s).")
        return
    full = result.diagnoses[:shown] if shown else result.diagnoses
    for position, diagnosis in enumerate(full, 1):
        console.print(diagnosis_renderable(position, diagnosis))
        console.print()
    rest = result.diagnoses[len(full) :]
    if rest:
        console.print(f"Also found ({len(rest)} more; --top {len(result.diagnoses)} shows them in full):", style="bold")
        for position, diagnosis in enumerate(rest, len(full) + 1):
            console.print(f"  {position}. {diagnosis.confidence:.2f} {diagnosis.title}  [{diagnosis.category}] {diagnosis.id}")
        console.print()
    for probe in result.probes:
        findings = "; ".join(str(f.get("message", "")) for f in probe.get("findings") or [] if isinstance(f, dict))
        device = (probe.get("device") or {}).get("type", "?")
        console.print(f"probe {probe.get('probe')} on {device}: {probe.get('status')}. {findings}".rstrip(), style="magenta")
    if result.root_rank is not None:
        console.print(f"Root rank: {result.root_rank}", style="bold magenta")
    console.print(
        f"{len(result.diagnoses)} diagnoses from {stats.lines:,} lines, {stats.bytes / (1 << 20):.1f} MiB "
        f"in {stats.seconds:.2f} s.",
        style="dim",
    )
