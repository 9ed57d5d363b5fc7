"""How a diagnosis, a fix and a probe verdict look, in the words and styles both faces use."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from triage.render.layout import CodeBlock, Hanging, whole_line
from triage.results import Diagnosis, FixResult

SEVERITY_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
INCONCLUSIVE = "inconclusive here"


def status_note(diagnosis: Diagnosis) -> str:
    """Why a diagnosis may rank lower than its evidence alone says: its entry is unfinished or unproven."""
    return f"{diagnosis.status} entry, ranked lower" if diagnosis.status in ("draft", "experimental") else ""


def confidence_bar(confidence: float, width: int = 10) -> str:
    filled = round(confidence * width)
    return "█" * filled + "░" * (width - filled)


def fix_renderable(
    label: str,
    fix: FixResult,
    *,
    theme: str = "ansi_dark",
    title_style: str = "bold",
    full: bool = True,
    whole: bool = False,
) -> Hanging:
    """One fix: its title after `label`, then description, a shell block (env, commands), code before/after.

    Brief (`full=False`): the title, the shell block and the code to write; the description only
    for a fix that has neither. `whole`: code, commands and links wider than the width are printed
    whole, past it, instead of cut (or, for a link, wrapped).
    Shared by the CLI and the TUI's detail pane (which passes its theme and a selection style).
    """
    parts: list[RenderableType] = [Text(fix.title, style=title_style)]
    shell = [f"export {name}={value}" for name, value in fix.env.items()]
    # A link (the tracker search of an unknown error) is opened, not run: no prompt before it.
    shell += [command if command.startswith(("https://", "http://")) else f"$ {command}" for command in fix.commands]
    # A fix with nothing to run or write (what fixed a similar reported failure) is its description and
    # where it was confirmed: the brief form would show a heading and no advice.
    told = full or not (shell or fix.code)
    if fix.description and told:
        parts.append(Text(" ".join(fix.description.split()), style="dim"))
    if shell:
        parts.append(CodeBlock("\n".join(shell), "bash", theme, whole=whole))
    if fix.confirmed_by and told:
        more = f" (+{len(fix.confirmed_by) - 1} more)" if len(fix.confirmed_by) > 1 else ""
        confirmed = Text(f"confirmed in {fix.confirmed_by[0]}{more}", style="dim")
        parts.append(whole_line(confirmed) if whole else confirmed)
    if fix.code is not None:
        shown = (
            (("before:", fix.code.before), ("after:", fix.code.after)) if full else (("change to:", fix.code.after),)
        )
        for heading, code in shown:
            parts += [Text(heading, style="dim"), CodeBlock(code, fix.code.language, theme, whole=whole)]
    return Hanging(Group(*parts), Text(f"{label} ", style=title_style))


ROLE_WORDS = {"root": "failed first", "cascade": "followed the first failure"}
"""A diagnosis's role in a multi-rank failure, as a reader says it ("root" alone read as the user root)."""


def where_text(diagnosis: Diagnosis) -> str:
    """'rank 3 · failed first', 'rank 3', 'failed first' or '': only what the log told."""
    rank = f"rank {diagnosis.rank}" if diagnosis.rank is not None else ""
    role = ROLE_WORDS.get(diagnosis.role or "", "")
    return " · ".join(part for part in (rank, role) if part)


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
    why = "; ".join(probe_messages(result)) or f"no finding on {probe_device(result)}"
    return f"{INCONCLUSIVE}: confirms or rules out no cause ({why})"


def probe_messages(result: dict[str, Any]) -> list[str]:
    return [str(f.get("message", "")) for f in result.get("findings") or [] if isinstance(f, dict)]


def probe_device(result: dict[str, Any]) -> str:
    device = result.get("device")
    return str(device.get("type", "?")) if isinstance(device, dict) else str(device or "?")


def context_text(context: dict[str, Any]) -> str:
    """What the log shows was running, in one line: 'vllm-ascend · torchrun · torch_npu 2.5.1 · Ascend910B2'."""
    versions = context.get("versions") or {}
    parts = [context.get("workload"), context.get("launcher")]
    parts += [f"{name} {versions[name]}" for name in ("torch", "torch_npu", "cann", "driver") if name in versions]
    parts.append(context.get("soc"))
    return " · ".join(str(part) for part in parts if part)
