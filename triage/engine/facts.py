"""The ranking with what each diagnosis's KB entry says about itself: its status and related entries.

Kept apart from the ranking, which needs neither; every face asks for its result here.
"""

from __future__ import annotations

from triage.engine.scanner import Scanner
from triage.results import ScanResult, replace


def ranked_result(scanner: Scanner, *, top: int | None = None, min_confidence: float = 0.0) -> ScanResult:
    result = scanner.result(top=top, min_confidence=min_confidence)
    cards = {card.id: card for card in scanner.kb.entries}
    diagnoses = [
        replace(d, status=cards[d.id].status, related=list(cards[d.id].related)) if d.id in cards else d
        for d in result.diagnoses
    ]
    return replace(result, diagnoses=diagnoses)
