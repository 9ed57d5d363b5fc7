"""Counts over a KB for `triage kb stats`: what is covered and what still lacks evidence."""

from __future__ import annotations

from collections import Counter
from typing import Any

from triage.kb.loader import KnowledgeBase


def kb_stats(kb: KnowledgeBase) -> dict[str, Any]:
    entries = sorted(kb.entries.values(), key=lambda e: e.id)
    fixes = [fix for e in entries for fix in e.fixes]
    signatures = [s for e in entries for s in e.signatures] + [s for e in entries for c in e.causes for s in c.evidence]
    return {
        "entries": len(entries),
        "by_category": dict(sorted(Counter(e.category for e in entries).items())),
        "by_status": dict(sorted(Counter(e.status for e in entries).items())),
        "signatures_by_kind": dict(sorted(Counter(s.kind for s in signatures).items())),
        "examples": {
            "match": sum(len(e.examples.match) for e in entries),
            "no_match": sum(len(e.examples.no_match) for e in entries),
        },
        "fixes": {
            "fix": sum(fix.kind == "fix" for fix in fixes),
            "diagnostic": sum(fix.kind == "diagnostic" for fix in fixes),
            # Where each fix was confirmed to work or prescribed for its failure (issue 12's proof).
            "with_proof": sum(fix.kind == "fix" and bool(fix.confirmed_by) for fix in fixes),
            # Fixes that say what to do without showing it: no command, setting or code change to copy
            # (issue 12: every fix concrete for its stack). Updating the culprit package gets its commands at scan time.
            "described_only": sum(
                fix.kind == "fix" and not (fix.commands or fix.env or fix.code or fix.culprit) for fix in fixes
            ),
        },
        "without_references": [e.id for e in entries if not e.references],
        "without_examples": [e.id for e in entries if not e.examples.match],
    }
