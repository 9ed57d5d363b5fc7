"""What a line of one shape matched, so that its repeats (a warning printed a million times) are
counted without being decoded or matched again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triage.engine.job_ranks import RankAt, Unread
from triage.engine.unclaimed import ErrorLine

MATCH_WINDOW = 16 * 1024
"""Candidate lines longer than this are matched window by window."""
Support = tuple[int, str, int, float, dict[str, Any]]
"""(entry, cause id, signature index, quality, extracted values) of a line's evidence for a cause."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What a line of one shape (its bytes with digits masked) matched, under the prefilter ids it
    was matched with: its repeats only bump counters."""

    ids: set[int] | frozenset[int] | None
    primary: tuple[int, ...]
    """Entries whose own signatures it matched."""
    supports: tuple[Support, ...]
    unclaimed: ErrorLine | None
    """The safety net's record of it, when it is an error line no specific entry claimed."""
    rank_at: RankAt | Unread
    """Where its lines write their rank (see `job_ranks.rank_span`)."""

    matched: bool = field(init=False)
    quiet: bool = field(init=False)
    """Nothing to count: its repeats are skipped without even counting their line numbers."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "matched", bool(self.primary or self.supports))
        object.__setattr__(self, "quiet", not self.matched and self.unclaimed is None)
