"""What the matcher has seen so far for each entry, kept small however long the log runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triage.results import EvidenceLine, replace

MAX_EVIDENCE_LINES = 8
MAX_TEXT = 500


@dataclass
class EntryEvidence:
    """Evidence for one entry: the best quality per signature, a few lines, extracted values."""

    signature_quality: dict[int, float] = field(default_factory=dict)
    """Entry-level signature index -> best match quality in (0, 1]."""
    cause_quality: dict[str, dict[int, float]] = field(default_factory=dict)
    """Cause id -> signature index -> best quality."""
    lines: list[EvidenceLine] = field(default_factory=list)
    count: int = 0
    extracted: dict[str, Any] = field(default_factory=dict)
    first_seen: int | None = None
    first_rank: int | None = None

    @property
    def fired(self) -> bool:
        return bool(self.signature_quality)

    def add_line(self, order: int, line: EvidenceLine, *, primary: bool) -> None:
        """Record a matched line; only primary (entry-signature) lines date the entry's first sighting."""
        self.count += 1
        if primary and self.first_seen is None:
            self.first_seen = order
            self.first_rank = line.rank
        if len(self.lines) < MAX_EVIDENCE_LINES and all(
            (seen.source, seen.line) != (line.source, line.line) for seen in self.lines
        ):
            text = line.text if len(line.text) <= MAX_TEXT else line.text[: MAX_TEXT - 1] + "…"
            self.lines.append(replace(line, text=text))

    def merge(self, later: EntryEvidence, line_offset: int, order_offset: int) -> None:
        """Fold in the evidence of a later stretch of the same source, shifted past what came before."""
        for index, quality in later.signature_quality.items():
            self.signature_quality[index] = max(self.signature_quality.get(index, 0.0), quality)
        for cause, qualities in later.cause_quality.items():
            mine = self.cause_quality.setdefault(cause, {})
            for index, quality in qualities.items():
                mine[index] = max(mine.get(index, 0.0), quality)
        if self.first_seen is None and later.first_seen is not None:
            self.first_seen = later.first_seen + order_offset
            self.first_rank = later.first_rank
        self.count += later.count
        for line in later.lines:
            if len(self.lines) >= MAX_EVIDENCE_LINES:
                break
            self.lines.append(replace(line, line=line.line + line_offset))
        self.add_values(later.extracted)

    def add_values(self, values: dict[str, Any]) -> None:
        # The first occurrence is kept: the first failure is the one that explains the rest.
        for name, value in values.items():
            self.extracted.setdefault(name, value)
