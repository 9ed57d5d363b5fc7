"""What the matcher has seen so far for each entry, kept small however long the log runs.

Evidence cannot be flooded: lines that match the entry itself (primary lines) and lines that only
support one of its causes are counted apart, the listing keeps most of its slots for primary lines
(the first, the last and the first of each distinct shape), and a cause's line counts only near the
entry's own lines (see `CauseWindow`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from triage.engine.job_ranks import UNREAD, RankAt, Unread, rank_of_line
from triage.engine.normalize import decode_line, shape_key
from triage.results import EvidenceLine

if TYPE_CHECKING:
    from triage.engine.shapes import Support

MAX_EVIDENCE_LINES = 8
MAX_SUPPORT_LINES = 2
"""Listing slots a cause's supporting lines may take; the others are the entry's own lines."""
MAX_TEXT = 500
CAUSE_WINDOW = 2000
"""A cause's line counts when it is at most this many lines from one of the entry's own lines, in
the same source and (where both lines name one) the same rank."""
WAITING_LINES = 16
"""Cause lines seen before any of the entry's own lines, kept per source in case one follows."""


class Sighting:
    """Where a matched line was seen. Repeats of a line are sighted by the million: their text and
    rank are only read when the line is shown or a rank is needed."""

    __slots__ = ("order", "source", "line", "_content", "_source_rank", "_rank", "_read", "_rank_at")

    def __init__(
        self,
        order: int,
        source: str,
        line: int,
        content: bytes | str,
        source_rank: int | None,
        rank_at: RankAt | Unread = UNREAD,
    ) -> None:
        self.order = order
        """Arrival order of the entries' own lines (and error lines); a line that is only cause
        evidence shares the order of the numbered line before it, and is listed after it."""
        self.source = source
        self.line = line
        self._content = content
        self._source_rank = source_rank
        self._read = False
        self._rank: int | None = None
        self._rank_at = rank_at
        """Where the line's shape writes its rank (see `job_ranks.rank_span`), when that is known:
        a repeat's rank is then read there, not searched for."""

    @property
    def rank(self) -> int | None:
        if not self._read:
            at, content = self._rank_at, self._content
            if at is UNREAD:
                head = content[:200]
                found = rank_of_line(head.decode("latin-1") if isinstance(head, bytes) else head)
            else:
                found = None if at is None else int(content[at[0] : at[1]])
            self._rank = self._source_rank if found is None else found
            self._read = True
        return self._rank

    @property
    def shape(self) -> str:
        """The line's shape key (`normalize.shape_key`) as text: lines that differ only in numbers
        and hex ids are one shape."""
        return shape_key(self.evidence(None).text.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")

    def shifted(self, lines: int, orders: int) -> Sighting:
        """The same sighting in a scan that had already read `lines` lines and numbered `orders`."""
        return Sighting(
            self.order + orders, self.source, self.line + lines, self._content, self._source_rank, self._rank_at
        )

    def evidence(self, supports: str | None) -> EvidenceLine:
        content = self._content
        text = (decode_line(content) if isinstance(content, bytes) else content).strip()
        text = text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
        return EvidenceLine(source=self.source, line=self.line, text=text, rank=self.rank, supports=supports)


@dataclass
class EntryEvidence:
    """Evidence for one entry: the best quality per signature, counts, a few lines, extracted values."""

    signature_quality: dict[int, float] = field(default_factory=dict)
    """Entry-level signature index -> best match quality in (0, 1]."""
    cause_quality: dict[str, dict[int, float]] = field(default_factory=dict)
    """Cause id -> signature index -> best quality."""
    count: int = 0
    """Primary lines: lines that match one of the entry's own signatures."""
    shown: list[Sighting] = field(default_factory=list)
    """The first primary line of each distinct shape, in order."""
    last: Sighting | None = None
    support: list[tuple[Sighting, str, int]] = field(default_factory=list)
    """(line, cause id, signature index): the first line of each cause signature."""
    extracted: dict[str, Any] = field(default_factory=dict)
    first_seen: int | None = None
    first_rank: int | None = None

    @property
    def fired(self) -> bool:
        return bool(self.signature_quality)

    @property
    def lines(self) -> list[EvidenceLine]:
        """What to show, in order: supporting lines only in the slots primary lines leave them."""
        support = self.support[:MAX_SUPPORT_LINES]
        primary = list(self.shown)
        if self.last is not None and all(seen.order != self.last.order for seen in primary):
            room = MAX_EVIDENCE_LINES - min(len(support), MAX_SUPPORT_LINES)
            primary = primary[: room - 1] + [self.last]
        primary = primary[: MAX_EVIDENCE_LINES - min(len(support), MAX_SUPPORT_LINES)]
        support = support[: MAX_EVIDENCE_LINES - len(primary)]
        listed = [(seen.order, seen.evidence(None)) for seen in primary]
        listed += [(seen.order, seen.evidence(cause)) for seen, cause, _ in support]
        return [line for _, line in sorted(listed, key=lambda pair: pair[0])]

    def add_primary(self, seen: Sighting, *, new_shape: bool) -> None:
        """Count a line that matched the entry itself; a line of a shape not seen before is listed.
        The scan's shapes are a bounded cache, matched again when one of the same text shape but
        other prefilter ids (another digit group) took its place: a shape listed is not listed
        again, as `merge` does with a later part's."""
        self.add_run(1, seen, seen)
        if new_shape and len(self.shown) < MAX_EVIDENCE_LINES and seen.shape not in {s.shape for s in self.shown}:
            self.shown.append(seen)

    def add_run(self, count: int, first: Sighting, last: Sighting) -> None:
        """Count `count` lines that matched the entry itself, the first and last of them as given,
        listing none: a tally's repeats of shapes listed before (see `triage.engine.tallies`), or
        the one line `add_primary` counts."""
        self.count += count
        if self.first_seen is None:
            self.first_seen = first.order
            self.first_rank = first.rank
        self.last = last

    def holds(self, support: Support) -> bool:
        """Whether counting this cause evidence again would change nothing: its cause signature was
        counted at this quality or better, and each value it extracts is already kept."""
        _, cause, index, quality, values = support
        qualities = self.cause_quality.get(cause)
        return (
            qualities is not None
            and qualities.get(index, -1.0) >= quality
            and all(name in self.extracted for name in values)
        )

    def add_support(self, seen: Sighting | Callable[[], Sighting], cause: str, index: int, quality: float) -> None:
        """Count a line (or the first of a run of one shape) that supports a cause; the first line
        of each cause signature is listed. The line's sighting may come as how to make it: a line
        that changes nothing shown never needs it."""
        qualities = self.cause_quality.setdefault(cause, {})
        if index not in qualities and len(self.support) < MAX_SUPPORT_LINES:
            seen = seen if isinstance(seen, Sighting) else seen()
            # The same line, not the same order: cause lines are not numbered (see `Sighting.order`).
            if all(listed is not seen for listed, _, _ in self.support) and self.last is not seen:
                self.support.append((seen, cause, index))
        qualities[index] = max(qualities.get(index, 0.0), quality)

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
        shown = {seen.shape for seen in self.shown}
        for seen in later.shown:  # a shape the earlier part already listed is not listed twice
            if len(self.shown) < MAX_EVIDENCE_LINES and seen.shape not in shown:
                self.shown.append(seen.shifted(line_offset, order_offset))
        if later.last is not None:
            self.last = later.last.shifted(line_offset, order_offset)
        listed = {(cause, index) for _, cause, index in self.support}
        for seen, cause, index in later.support:
            if len(self.support) < MAX_SUPPORT_LINES and (cause, index) not in listed:
                self.support.append((seen.shifted(line_offset, order_offset), cause, index))
        self.add_values(later.extracted)

    def add_values(self, values: dict[str, Any]) -> None:
        # The first occurrence is kept: the first failure is the one that explains the rest.
        for name, value in values.items():
            self.extracted.setdefault(name, value)


class CauseWindow:
    """Where an entry's own lines were seen, so that its causes' lines count only near them: a
    warning printed a million times across the log cannot support a cause of an error it never
    came near."""

    def __init__(self) -> None:
        self._primary: dict[str, dict[int | None, int]] = {}
        """source -> rank -> line number of the entry's latest own line there."""
        self._waiting: dict[str, deque[tuple[Sighting, Any]]] = {}

    def note_primary(self, seen: Sighting) -> list[Any]:
        """Record an own line; returns the waiting cause lines now in reach (each once)."""
        primary = self._primary.get(seen.source)
        if primary is None:
            primary = self._primary[seen.source] = {}
        primary[seen.rank] = seen.line
        waiting = self._waiting.get(seen.source)
        if not waiting:
            return []
        reached: list[Any] = []
        kept: deque[tuple[Sighting, Any]] = deque(maxlen=WAITING_LINES)
        for cause_seen, payload in waiting:
            if seen.line - cause_seen.line <= CAUSE_WINDOW:
                (reached if _same_rank(seen.rank, cause_seen.rank) else kept).append((cause_seen, payload))
        self._waiting[seen.source] = kept
        return [payload for _, payload in reached]

    def waits(self, source: str) -> bool:
        """Whether cause lines of `source` wait for an own line."""
        return bool(self._waiting.get(source))

    def note_last(self, source: str, lines: dict[int | None, int]) -> None:
        """Record the last own line of each rank (rank -> line number) of a run whose first line
        of each rank was noted (`note_primary`): later lines of a rank reach no waiting line
        that its first did not."""
        self._primary.setdefault(source, {}).update(lines)

    def near(self, seen: Sighting, payload: Any) -> bool:
        """Whether a cause line counts now; if not, it waits for an own line to follow."""
        if counts_at(self.reaching(seen.source, seen.line), lambda: seen.rank):
            return True
        self.wait(seen, payload)
        return False

    def reaching(self, source: str, line: int) -> list[int | None]:
        """The ranks (None: a line that names none) whose latest own line is near enough before this
        line of `source` for a cause line there to count, if its rank is one of them (or it names none)."""
        return [rank for rank, own in self._primary.get(source, {}).items() if line - own <= CAUSE_WINDOW]

    def reach_of(self, source: str, rank: int | None) -> int | None:
        """The last line of `source` where a cause line of rank `rank` (None: one that names none)
        still counts, or None where none does: as `reaching` with `counts_at` decide, for a rank
        known before the line is read."""
        primary = self._primary.get(source, {})
        near = primary.values() if rank is None else [line for r, line in primary.items() if r is None or r == rank]
        last = max(near, default=None)
        return None if last is None else last + CAUSE_WINDOW

    def wait(self, seen: Sighting, payload: Any) -> None:
        """Keep a cause line that does not count yet, in case an own line follows."""
        waiting = self._waiting.get(seen.source)
        if waiting is None:  # not `setdefault`: that would build a deque for every line that waits
            waiting = self._waiting[seen.source] = deque(maxlen=WAITING_LINES)
        waiting.append((seen, payload))


def counts_at(ranks: list[int | None], rank: Callable[[], int | None]) -> bool:
    """Whether a cause line counts, given the ranks `CauseWindow.reaching` finds for it and (read
    only when they decide) its own."""
    return bool(ranks) and (None in ranks or (own := rank()) is None or own in ranks)


def _same_rank(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


class CauseWindows(dict[int, CauseWindow]):
    """Each entry's CauseWindow, made on first use (looked up on every cause line, so not built and
    dropped there as `setdefault` would)."""

    def __missing__(self, entry: int) -> CauseWindow:
        window = self[entry] = CauseWindow()
        return window
