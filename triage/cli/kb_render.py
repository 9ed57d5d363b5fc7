"""Plain-text rendering of one KB entry for `triage kb show`."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

from triage.kb.models import Entry
from triage.kbtools.cases import Case, thread_key


def render_entry(entry: Entry, path: Path, proof: Mapping[str, Case] | None = None) -> str:
    """The entry as text; `proof` (corpus cases whose thread confirms a fix, by thread) names the
    case behind each confirming thread a fix cites."""
    out = [f"{entry.id}: {entry.title}", f"  {entry.category} | {entry.severity} | {entry.status} | {path}"]
    if entry.generic:
        out.append("  generic wrapper: ranks below any specific cause in the same log")
    if entry.stall:
        out.append("  stall: its signatures count only where a log that has stopped ends on them")
    out += ["", *textwrap.wrap(" ".join(entry.summary.split()), 100)]
    out += _section("Signatures", [f"{s.kind} (weight {s.weight:g}): {s.pattern}" for s in entry.signatures])
    causes = []
    for cause in entry.causes:
        causes.append(f"{cause.id} (prior {cause.prior:g}): {cause.title}")
        if cause.how_to_tell:
            causes.append(f"    how to tell: {' '.join(cause.how_to_tell.split())}")
    out += _section("Causes", causes)
    fixes = []
    for fix in entry.fixes:
        fixes.append(fix.title + (f"  [for: {', '.join(fix.addresses)}]" if fix.addresses else ""))
        stacks = "; ".join(
            f"{key} {', '.join(f'{n} {v}' for n, v in values.items()) if isinstance(values, dict) else ', '.join(values)}"
            for key, values in fix.applies_to.as_dict().items()
        )
        fixes += [f"    only for: {stacks}"] if stacks else []
        fixes += (
            ["    at scan time: the package that raised the error, and its upgrade commands"] if fix.culprit else []
        )
        fixes += [f"    {line}" for line in textwrap.wrap(" ".join(fix.description.split()), 96)]
        fixes += [f"    export {name}={value}" for name, value in fix.env.items()]
        fixes += [f"    $ {command}" for command in fix.commands]
        if fix.code:
            fixes += ["    before:", *[f"      {line}" for line in fix.code.before.splitlines()]]
            fixes += ["    after:", *[f"      {line}" for line in fix.code.after.splitlines()]]
        fixes += [f"    confirmed: {_proof(url, proof or {})}" for url in fix.confirmed_by]
    out += _section("Fixes", fixes)
    out += _section("References", [f"{r.url or r.document} ({r.supports})" for r in entry.references])
    examples = [f"match: {text}" for text in entry.examples.match] + [
        f"no_match: {text}" for text in entry.examples.no_match
    ]
    out += _section("Examples", examples)
    return "\n".join(out)


def _proof(url: str, proof: Mapping[str, Case]) -> str:
    case = proof.get(thread_key(url))
    return f"{url} (corpus case {case.id}, {case.split} split)" if case else url


def _section(title: str, lines: list[str]) -> list[str]:
    return ["", f"{title}:", *[f"  {line}" for line in lines]] if lines else []
