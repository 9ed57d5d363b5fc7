"""A markdown report of a scan, ready to paste into an issue; pure functions, no UI imports.

Redaction applies only to text that came from the user's machine (log lines, source names,
environment values, probe messages), never to KB text such as reference URLs.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from collections.abc import Callable, Iterable

from triage import __version__
from triage.results import Diagnosis, FixResult, ScanResult

TOP_DIAGNOSES = 3
MAX_EVIDENCE = 5
ENV_PREFIXES = ("ASCEND_", "HCCL_", "PYTORCH_NPU_", "TORCH_NPU_", "NPU_", "RANK", "WORLD_SIZE", "LOCAL_RANK")

_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
# A "::" or five colons tells an IPv6 address from a clock time such as 10:00:01.
_IPV6 = re.compile(
    r"(?<![\w:])(?=[0-9a-fA-F:]*::|(?:[0-9a-fA-F]{1,4}:){5})(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?![\w:])"
)
# Only dotted names ending in a network suffix: Python module paths (torch_npu.npu.utils) must survive.
_HOSTNAME = re.compile(
    r"\b(?:[a-zA-Z0-9-]+\.)+(?:local|lan|internal|intra|corp|cluster|com|net|org|io|cn|edu|cloud)\b"
)
# Two or more components, so that a lone "/tmp" or a ratio "1/2" is left alone.
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.\-@+]+){2,}/?")


def redact(text: str, hosts: Iterable[str] = ()) -> str:
    """`text` with paths (all but the file name), IP addresses and host names replaced."""
    for host in sorted({h for h in hosts if h}, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(host)}\b", "<host>", text)
    text = _IPV4.sub("<ip>", text)
    text = _IPV6.sub("<ip>", text)
    text = _PATH.sub(lambda m: "<path>/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    return _HOSTNAME.sub("<host>", text)


def collect_environment() -> dict[str, str]:
    """What an issue reader needs to know about this machine, Ascend-related variables included."""
    environment = {
        "triage": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
    }
    environment |= {name: value for name, value in sorted(os.environ.items()) if name.startswith(ENV_PREFIXES)}
    return environment


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
    hosts = [environment.get("host", "")]
    clean: Callable[[str], str] = (lambda text: redact(text, hosts)) if redacted else (lambda text: text)
    lines = ["# ascend-triage report", ""]
    lines.append(f"Sources: {', '.join(clean(source) for source in sources) or '(none)'}  ")
    lines.append(f"Scanned {result.stats.lines:,} lines; {len(result.diagnoses)} diagnoses.")
    if result.root_rank is not None:
        lines.append(f"Root rank: {result.root_rank}.")
    lines.append("")
    if not result.diagnoses:
        lines += ["No known failure found.", ""]
    for position, diagnosis in enumerate(result.diagnoses[:top], 1):
        lines += _diagnosis_section(position, diagnosis, clean)
    if result.probes:
        lines += ["## Probe results", ""]
        for probe in result.probes:
            lines.append(f"- **{probe.get('probe', '?')}**: {probe.get('status', '?')}")
            for finding in probe.get("findings") or []:
                if isinstance(finding, dict):
                    lines.append(f"  - {clean(str(finding.get('message', finding.get('id', ''))))}")
        lines.append("")
    lines += ["## Environment", "", "| | |", "|---|---|"]
    lines += [f"| {name} | `{clean(value)}` |" for name, value in environment.items()]
    return "\n".join(lines) + "\n"


def _diagnosis_section(position: int, diagnosis: Diagnosis, clean: Callable[[str], str]) -> list[str]:
    lines = [
        f"## {position}. {diagnosis.title}",
        "",
        f"`{diagnosis.id}` · {diagnosis.category} · {diagnosis.severity} · confidence {diagnosis.confidence:.2f}",
        "",
    ]
    if diagnosis.summary:
        lines += [diagnosis.summary.strip(), ""]
    if diagnosis.evidence:
        lines += [f"**Evidence** ({diagnosis.evidence_count} lines):", "", "```text"]
        lines += [clean(f"{e.source}:{e.line}: {e.text}") for e in diagnosis.evidence[:MAX_EVIDENCE]]
        lines += ["```", ""]
    if diagnosis.causes:
        lines += ["**Likely causes:**", ""]
        lines += [f"- {cause.probability:.0%} {cause.title} (`{cause.id}`)" for cause in diagnosis.causes]
        lines.append("")
    if diagnosis.probe_notes:
        lines += ["**Probe notes:**", ""] + [f"- {clean(note)}" for note in diagnosis.probe_notes] + [""]
    if diagnosis.fixes:
        lines += ["**Fixes:**", ""]
        for number, fix in enumerate(diagnosis.fixes, 1):
            lines.append(f"{number}. {fix.title}")
            if fix.description:
                lines.append(f"   {fix.description.strip()}")
            body = fix_text(fix)
            if body:
                language = fix.code.language if fix.code is not None and not (fix.env or fix.commands) else "bash"
                lines += ["", f"   ```{language}"] + [f"   {line}" for line in body.splitlines()] + ["   ```"]
        lines.append("")
    if diagnosis.references:
        lines += ["**References:**", ""]
        lines += [f"- {ref.url or ref.document} ({ref.supports})" for ref in diagnosis.references]
        lines.append("")
    return lines
