"""What a scanner hands over for one part of a source: the unit of a parallel scan."""

from __future__ import annotations

from dataclasses import dataclass

from triage.engine.context import JobContext
from triage.engine.evidence import EntryEvidence
from triage.engine.unclaimed import UnclaimedErrors


@dataclass
class ScanPart:
    """What a scanner learned from one part of a source: a worker's answer in a parallel scan."""

    evidence: dict[int, EntryEvidence]
    unclaimed: UnclaimedErrors
    context: JobContext
    lines: int
    bytes: int
    candidate_lines: int
    orders: int
    """How many matched lines it numbered, so that a later part's order comes after them."""
    templates: int = 0
    """How many distinct line templates its fuzzy matcher judged."""
    before: tuple[int, int] = (0, 0)
    """The lines and the orders it numbered before the part itself (a worker reads the lines before
    its part first, see `Scanner.forget_found`): what it found is numbered after them."""
