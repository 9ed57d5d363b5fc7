"""A markdown report of a scan, ready to paste into an issue; pure functions, no UI imports.

Redaction (triage.redact) applies only to text that came from the user's machine (log lines, source
names, environment values, probe output), never to KB text such as reference URLs. Environment
values whose names say secret are masked even in an unredacted report.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable

from triage import __version__
from triage.render.parts import context_text, status_note
from triage.render.words import plural
from triage.redact import Redactor, mask_secret_values, redact_result, result_texts, this_host
from triage.results import Diagnosis, FixResult, ScanResult

TOP_DIAGNOSES = 3
MAX_EVIDENCE = 5
ENV_PREFIXES = (
    "ASCEND_",
    "HCCL_",
    "PYTORCH_NPU_",
    "TORCH_NPU_",
    "NPU_",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def redactor_for(result: ScanResult, sources: list[str], environment: dict[str, str]) -> Redactor:
    """The redactor for one scan: it knows the host names that its logs, sources and environment reveal."""
    # As `NAME=value`, so that MASTER_ADDR=node17 teaches the redactor that node17 is a host.
    texts = [*result_texts(result), *sources, *(f"{name}={value}" for name, value in environment.items())]
    return Redactor.for_texts(texts, hosts=[environment.get("host", "")])


def collect_environment() -> dict[str, str]:
    """What an issue reader needs to know about this machine, Ascend-related variables included."""
    environment = {
        "triage": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": this_host(),
    }
    environment |= {name: value for name, value in sorted(os.environ.items()) if name.startswith(ENV_PREFIXES)}
    return mask_secret_values(environment)


def fix_text(fix: FixResult) -> str:
    """A fix as plain text to paste into a shell or editor: env exports, commands, then the code change."""
    parts = [f"export {name}={value}" for name, value in fix.env.items()]
    parts += fix.commands
    if fix.code is not None:
        parts.append(fix.code.after.rstrip())
    return "\n".join(parts)


def build_report(
    result: ScanResult,
    *,
    sources: list[str],
    environment: dict[str, str],
    redacted: bool = False,
    top: int = TOP_DIAGNOSES,
) -> str:
    """The report as markdown; with `redacted`, machine-specific details are masked."""
    clean: Callable[[str], str] = lambda text: text  # noqa: E731
    if redacted:
        clean = redactor_for(result, sources, environment)
        result = redact_result(result, clean)
    lines = ["# ascend-triage report", ""]
    lines.append(f"Sources: {', '.join(clean(source) for source in sources) or '(none)'}  ")
    lines.append(
        f"Scanned {plural(result.stats.lines, 'line')}; {plural(len(result.diagnoses), 'diagnosis', 'diagnoses')}."
    )
    if result.root_rank is not None:
        lines.append(f"Root rank: {result.root_rank}.")
    if context_text(result.context):
        lines.append(f"Job (as the log shows it): {clean(context_text(result.context))}.")
    lines.append("")
    if not result.diagnoses:
        lines += ["No known failure found.", ""]
    for position, diagnosis in enumerate(result.diagnoses[:top], 1):
        lines += _diagnosis_section(position, diagnosis)
    if result.probes:
        lines += ["## Probe results", ""]
        for probe in result.probes:
            lines.append(f"- **{probe.get('probe', '?')}**: {probe.get('status', '?')}")
            for finding in probe.get("findings") or []:
                if isinstance(finding, dict):
                    lines.append(f"  - {finding.get('message', finding.get('id', ''))}")
        lines.append("")
    lines += ["## Environment", "", "| | |", "|---|---|"]
    lines += [f"| {name} | `{clean(value)}` |" for name, value in environment.items()]
    return "\n".join(lines) + "\n"


def _diagnosis_section(position: int, diagnosis: Diagnosis) -> list[str]:
    lines = [
        f"## {position}. {diagnosis.title}",
        "",
        f"`{diagnosis.id}` · {diagnosis.category} · {diagnosis.severity} · confidence {diagnosis.confidence:.2f}"
        + (f" · {status_note(diagnosis)}" if status_note(diagnosis) else ""),
        "",
    ]
    if diagnosis.summary:
        lines += [diagnosis.summary.strip(), ""]
    if diagnosis.evidence:
        lines += [f"**Evidence** ({plural(diagnosis.evidence_count, 'line')}):", "", "```text"]
        lines += [f"{e.source}:{e.line}: {e.text}" for e in diagnosis.evidence[:MAX_EVIDENCE]]
        lines += ["```", ""]
    if diagnosis.causes:
        lines += ["**Likely causes:**", ""]
        lines += [f"- {cause.probability:.0%} {cause.title} (`{cause.id}`)" for cause in diagnosis.causes]
        lines.append("")
    if diagnosis.probe_notes:
        lines += ["**Probe notes:**", ""] + [f"- {note}" for note in diagnosis.probe_notes] + [""]
    if diagnosis.fixes:
        lines += ["**Fixes** (then ways to confirm):", ""]
        for number, fix in enumerate(diagnosis.fixes, 1):
            lines.append(f"{number}. {'(to confirm) ' if fix.kind == 'diagnostic' else ''}{fix.title}")
            if fix.description:
                lines.append(f"   {fix.description.strip()}")
            if fix.confirmed_by:
                lines.append(f"   Confirmed in: {', '.join(fix.confirmed_by)}")
            body = fix_text(fix)
            if body:
                language = fix.code.language if fix.code is not None and not (fix.env or fix.commands) else "bash"
                lines += ["", f"   ```{language}"] + [f"   {line}" for line in body.splitlines()] + ["   ```"]
        lines += [f"- left out: {note}" for note in diagnosis.fix_notes]
        lines.append("")
    if diagnosis.references:
        lines += ["**References:**", ""]
        lines += [f"- {ref.url or ref.document} ({ref.supports})" for ref in diagnosis.references]
        lines.append("")
    if diagnosis.related:
        lines += ["**Related entries:** " + ", ".join(f"`{entry_id}`" for entry_id in diagnosis.related), ""]
    return lines
