"""The safety net: a diagnosis for an error that no KB entry claims.

A log that holds an error gets a diagnosis even when no rule knows it: the error line itself, the
category of the nearest known failures, the entries it resembles, a query to paste into the
trackers and the `triage kb new` command that would capture it. Its confidence says it is a guess.
"""

from __future__ import annotations

import re
from urllib.parse import quote_plus

from triage.engine.advice import order_fixes
from triage.engine.compiled import CompiledKB
from triage.engine.context import JobContext
from triage.engine.error_lines import exception_name
from triage.engine.nearest import Guess
from triage.engine.unclaimed import ErrorLine, UnclaimedErrors
from triage.results import CauseResult, Diagnosis, FixResult

ID = "unrecognised-error"
HEALTHY = "healthy"
"""The neighbours' label for error-looking lines of logs of runs that worked."""
MAX_CONFIDENCE = 0.45
"""Below the 0.5 that CI gates and healthy-log checks use: a guess never reads as a finding."""
MIN_CONFIDENCE = 0.15
RESEMBLES_AT = 75.0
"""A neighbouring entry this similar lends its causes and fixes, marked as borrowed."""
_QUERY_NOISE = re.compile(r"<[a-z]+>|['\"`]|\s+")


def diagnose_unclaimed(
    kb: CompiledKB, unclaimed: UnclaimedErrors, context: JobContext, *, need_neighbours: bool = False
) -> Diagnosis | None:
    """The guess for the most telling unclaimed errors; None without any, or when they read like a
    healthy run's chatter, or (need_neighbours) when no known failure resembles them."""
    telling = unclaimed.most_telling()
    if not telling:
        return None
    lead = telling[0]
    guess = kb.neighbour_index.guess([(e.message, e.salience) for e in telling])
    if (guess is None and need_neighbours) or (guess is not None and guess.category == HEALTHY):
        return None
    category = guess.category if guess else "other"
    strength = (guess.share * max(0.0, guess.score - 55.0) / 45.0) if guess else 0.0
    confidence = round(MIN_CONFIDENCE + (MAX_CONFIDENCE - MIN_CONFIDENCE) * strength * lead.salience, 3)
    borrowed = _borrowed_entry(kb, guess)
    causes, fixes = _advice(kb, borrowed, context)
    name = exception_name(lead.message)
    title = f"Unrecognised error: {lead.message[:100]}" if not name else f"Unrecognised {name}: {lead.message[len(name) + 2:][:90]}"
    resembles = ", ".join(f"{entry} ({score:.0f}%)" for entry, score in (guess.entries if guess else ()))
    summary = (
        f"No KB entry knows this error. Its closest known failures are {category.replace('_', ' ')} "
        f"({guess.share:.0%} of the vote, {guess.score:.0f}% similar)" if guess else "No KB entry knows this error, and no known failure resembles it"
    )
    summary += f"; it resembles {resembles}." if resembles else "."
    return Diagnosis(
        id=ID,
        category=category,
        title=title,
        severity="error",
        confidence=confidence,
        score=round(confidence, 3),
        summary=summary,
        generic=True,
        evidence=[e.line for e in telling[:4]],
        evidence_count=sum(e.count for e in telling),
        causes=causes,
        fixes=fixes + _next_steps(lead),
        probes=[],
        rank=lead.line.rank,
        first_seen=lead.order,
        guess=True,
        resembles=[entry for entry, _ in (guess.entries if guess else ())],
    )


def _borrowed_entry(kb: CompiledKB, guess: Guess | None) -> int | None:
    if guess is None or not guess.entries or guess.entries[0][1] < RESEMBLES_AT:
        return None
    wanted = guess.entries[0][0]
    return next((index for index, entry in enumerate(kb.entries) if entry.id == wanted), None)


def _advice(kb: CompiledKB, borrowed: int | None, context: JobContext) -> tuple[list[CauseResult], list[FixResult]]:
    if borrowed is None:
        return [CauseResult(id="unknown", title="Not known to the KB", probability=1.0)], []
    entry = kb.entries[borrowed]
    share = 1.0 / max(1, len(entry.causes))
    causes = [
        CauseResult(id=c.id, title=f"{c.title} (as in {entry.id})", probability=round(share, 3), how_to_tell=c.how_to_tell)
        for c in sorted(entry.causes, key=lambda c: -c.prior)
    ]
    fixes, _ = order_fixes(list(entry.fixes), causes, context)
    return causes, fixes


def search_query(message: str) -> str:
    """The message without its variable parts, quoted, for an issue tracker's search box."""
    from triage.engine.normalize import template

    words = _QUERY_NOISE.sub(" ", template(message)).split()
    return f'"{" ".join(words[:12])}" ascend npu'


def _next_steps(lead: ErrorLine) -> list[FixResult]:
    query = search_query(lead.message)
    source, line = lead.line.source, lead.line.line
    return [
        FixResult(
            title="Search the trackers for this message",
            description=f"Query: {query}",
            commands=[f"https://github.com/search?type=issues&q={quote_plus(query)}"],
            kind="diagnostic",
        ),
        FixResult(
            title="Capture it as a KB entry once you know the fix",
            commands=[f"triage kb new --from {source} --lines {line}-{line}"],
            kind="diagnostic",
        ),
    ]
