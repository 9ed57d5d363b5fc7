"""Cause-evidence lines, looked for only where they can count: near lines that may be an entry's own.

A cause's line counts only within `CAUSE_WINDOW` lines of one of its entry's own lines in the same
source (see `CauseWindow`), and cause patterns (`DataLoader`, `Compiling`, `should be`) also match
healthy chatter. So their own prefilter database runs only over the stretches of a block within
that many lines of a line that may be an entry's own, of the lines an earlier block's own line
still reaches, and of the block's last lines (an own line in the next block may reach back to
them). Those stretches hold every cause line that can count, and their lines arrive in log order
with the rest: a cause line outside them could neither count nor displace one that does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

from triage.engine.compiled import CompiledKB
from triage.engine.evidence import CAUSE_WINDOW
from triage.engine.matcher import LineMatcher, extract
from triage.engine.normalize import DIGITS_TO_ZERO, decode_line, masked_ids
from triage.engine.prefilter import CONTEXT, Candidate, Prefilter
from triage.engine.shapes import MATCH_WINDOW, Shape, Support

CAUSE_ONLY: frozenset[int] = frozenset()
"""The main ids of a line that only the cause database flagged (a main candidate always has some)."""
SUPPORTS_CACHE_LIMIT = 20_000

Line = tuple[int, int, "set[int] | frozenset[int] | None", "set[int] | None", "bytes | None"]
"""(start, end, main prefilter ids or CAUSE_ONLY, cause signature ids or None, its shape key when
known) of a line to match."""
Stretch = tuple[int, int]
Lead = tuple[int, "frozenset[int] | None"]
"""(line start, the entries with causes whose own line it may be; None: any of them)."""


class CauseLines:
    """Finds the cause-evidence lines of a block's stretches and what each supports, by line shape."""

    def __init__(self, kb: CompiledKB, prefilter: Prefilter, matcher: LineMatcher) -> None:
        self.enabled = any(kb.signatures[i].cause is not None for i in kb.exact)
        self._prefilter = prefilter
        self._matcher = matcher
        self._supports: dict[bytes, tuple[set[int], tuple[Support, ...]]] = {}
        """Digit-masked line -> the cause ids it was matched with and what it supports."""

    def lines(
        self, block: bytes, stretches: list[Stretch], main: list[Candidate], keys: list[bytes | None] | None = None
    ) -> list[Line]:
        """The main candidates (with their shape keys, when known) and the cause lines of the
        stretches, in block order, one item a line."""
        causes: list[Candidate] = []
        for start, end in stretches:
            causes += self._prefilter.cause_candidates(block, start, end)
        return merge(main, causes, keys)

    def supports(self, key: bytes, raw: bytes, ids: set[int]) -> tuple[Support, ...]:
        """What a line supports, matched once per shape (its digit-masked bytes) and cause ids."""
        known = self._supports.get(key)
        if known is not None and known[0] == ids:
            return known[1]
        text = decode_line(raw)
        found = tuple(
            (
                hit.signature.entry,
                hit.signature.cause or "",
                hit.signature.index,
                hit.quality,
                extract(hit.signature, text, hit.match),
            )
            for hit in self._matcher.exact(text, ids)
        )
        if len(self._supports) >= SUPPORTS_CACHE_LIMIT:
            self._supports.clear()
        self._supports[key] = (ids, found)
        return found


def leads(
    block: bytes, main: list[Candidate], shapes: dict[bytes, Shape], with_causes: frozenset[int]
) -> tuple[list[Lead], list[bytes | None]]:
    """The main candidates that may be own lines of an entry with causes, and of which: a known
    shape says; a new one (by its own match, or joined with the next line) may be any entry's.
    And each candidate's shape key (its digit-masked bytes) where one was worked out, for the scan."""
    out: list[Lead] = []
    keys: list[bytes | None] = []
    for line_start, line_end, ids in main:
        key = None
        if ids is not None and len(ids) == 1 and CONTEXT in ids:
            keys.append(key)
            continue  # only shows what was running: never matched
        if ids is not None and line_end - line_start <= MATCH_WINDOW:
            raw = block[line_start:line_end]
            key = raw.translate(DIGITS_TO_ZERO)
            shape = shapes.get(key)
            if shape is None and (masked := masked_ids(raw)) is not None:
                key, shape = masked, shapes.get(masked)  # a line with hex ids is kept under its `shape_key`
            keys.append(key)
            if shape is not None and shape.ids == ids:
                if not with_causes.isdisjoint(shape.primary):
                    out.append((line_start, with_causes.intersection(shape.primary)))
                continue
        else:
            keys.append(key)
        out.append((line_start, None))
    return out, keys


class NearLeads:
    """Where the leads of one source were, by entry, as far as they reach: a cause line that no lead
    of its entry is near cannot count, and is dropped before it costs a sighting."""

    def __init__(self) -> None:
        self._until = 0
        """The last line number an earlier block's lead reaches."""
        self._any: list[int] = []
        """Line numbers of leads that may be any entry's (and the last one of earlier blocks)."""
        self._by_entry: dict[int, list[int]] = {}
        self.kept_from = 0
        """Lines from this line number on are kept whatever they support: the next block's leads
        may reach them."""

    def plan(self, block: bytes, span: tuple[int, int], found: list[Lead], lines_before: int) -> Plan:
        """Where to look for cause lines in block[start:end], the next block of the source, after
        `lines_before` lines of it."""
        start, end = span
        plan = stretches(block, start, end, [lead for lead, _ in found], self._until - lines_before)
        leads = [(entries, line) for (_, entries), (_, line) in zip(found, plan.marks)]
        self.note(leads, lines_before, line_count(block, span))
        return plan

    def note(self, found: list[tuple[frozenset[int] | None, int]], lines_before: int, lines: int) -> None:
        """Take in the leads of the next block of the source, a block of `lines` lines after
        `lines_before` lines of it. A lead is (the entries whose own line it may be, None for any;
        how many lines after the block's first it is)."""
        self._any = self._any[-1:]
        self._by_entry = {entry: numbers[-1:] for entry, numbers in self._by_entry.items()}
        for entries, line in found:
            if entries is None:
                self._any.append(lines_before + 1 + line)
            else:
                for entry in entries:
                    self._by_entry.setdefault(entry, []).append(lines_before + 1 + line)
        if found:
            self._until = lines_before + 1 + found[-1][1] + CAUSE_WINDOW
        self.kept_from = lines_before + 1 + max(0, lines - 1 - CAUSE_WINDOW)  # as `stretches` keeps them

    def supports(self, line: int, found: tuple[Support, ...]) -> tuple[Support, ...]:
        """Of what a line (its number) supports, what a lead of the same entry is near enough to count."""
        if not found or line >= self.kept_from:
            return found
        if len(found) == 1:  # the usual case, by far
            return found if self._near(found[0][0], line) else ()
        return tuple(support for support in found if self._near(support[0], line))

    def reach(self, entries: frozenset[int]) -> list[tuple[int, int]]:
        """The line numbers (low, high excluded, in order, apart) where a lead of one of these
        entries (or of any) makes a cause line count, by `supports`, in the block just noted."""
        leads = sorted({*self._any, *(line for entry in entries for line in self._by_entry.get(entry, ()))})
        return _union([(line - CAUSE_WINDOW, line + CAUSE_WINDOW + 1) for line in leads])

    def _near(self, entry: int, line: int) -> bool:
        lines = self._by_entry.get(entry)
        if lines:
            at = bisect_left(lines, line - CAUSE_WINDOW)
            if at < len(lines) and lines[at] <= line + CAUSE_WINDOW:
                return True
        lines = self._any
        at = bisect_left(lines, line - CAUSE_WINDOW)
        return at < len(lines) and lines[at] <= line + CAUSE_WINDOW


class CauseGroups:
    """The sets of entries whose causes the lines of one cause shape are evidence of, by the shape
    table's group (see `Shapes.held`): few, one per set."""

    def __init__(self) -> None:
        self._sets: list[frozenset[int]] = []

    def __getitem__(self, group: int) -> frozenset[int]:
        return self._sets[group]

    def of(self, entries: frozenset[int]) -> int:
        """The group of lines that are evidence of these entries' causes."""
        if entries not in self._sets:
            self._sets.append(entries)
        return self._sets.index(entries)

    def reach(self, near: NearLeads, lines_before: int) -> list[list[tuple[int, int]]]:
        """Per group, the (low, high) line indices of the next block (after `lines_before` lines)
        where its lines count: near a lead of one of its entries."""
        first = lines_before + 1  # the line number of the block's first line
        return [
            [(max(0, low - first), high - first) for low, high in near.reach(entries) if high > first]
            for entries in self._sets
        ]


def union_flags(
    pieces: Iterable[tuple[set[int] | frozenset[int] | None, set[int] | None]],
) -> tuple[set[int] | frozenset[int] | None, set[int] | None]:
    """What the prefilters flag on a line, from what they flag on its pieces: every main id (None,
    'try all', where a piece is so flagged) and every cause id; CAUSE_ONLY and None where none."""
    ids: set[int] | frozenset[int] | None = CAUSE_ONLY
    cause_ids: set[int] | None = None
    for flagged, causes in pieces:
        if flagged is None or ids is None:
            ids = None
        elif flagged:
            ids = set(flagged) if ids is CAUSE_ONLY else ids | flagged
        if causes is not None:
            cause_ids = (cause_ids or set()) | causes
    return ids, cause_ids


def line_count(block: bytes, span: tuple[int, int]) -> int:
    """How many lines block[start:end] holds, the last one maybe without its newline."""
    start, end = span
    return block.count(b"\n", start, end) + (0 if end == start or block[end - 1] == ord("\n") else 1)


def merge(main: list[Candidate], causes: list[Candidate], keys: list[bytes | None] | None = None) -> list[Line]:
    """Both lists (each in block order) as one, a line in both once with both sets of ids, and the
    main candidates' shape keys where known."""
    out: list[Line] = []
    keys = keys or [None] * len(main)
    position, count = 0, len(main)
    for start, end, ids in causes:
        while position < count and main[position][0] < start:
            line_start, line_end, main_ids = main[position]
            out.append((line_start, line_end, main_ids, None, keys[position]))
            position += 1
        if position < count and main[position][0] == start:
            out.append((start, main[position][1], main[position][2], ids, keys[position]))
            position += 1
        else:
            out.append((start, end, CAUSE_ONLY, ids, None))
    out += [(s, e, ids, None, key) for (s, e, ids), key in zip(main[position:], keys[position:])]
    return out


@dataclass(frozen=True)
class Plan:
    """Where in a block to look for cause lines."""

    stretches: list[Stretch]
    marks: list[tuple[int, int]]
    """(offset, how many lines after the block's first it is) of each lead."""
    tail: int
    """Where the block's last lines begin (kept whatever they support)."""


def stretches(block: bytes, start: int, end: int, leads: list[int], carry: int) -> Plan:
    """The stretches of block[start:end] to look for cause lines in.

    leads: line starts, in order, of lines that may be an entry's own; carry: how many of the
    block's first lines an earlier block's own line still reaches.
    """
    found: list[Stretch] = []
    if carry > 0:
        found.append((start, _forward(block, start, carry - 1, end)))
    line, position = 0, start
    first = previous = -1
    marks = []
    for lead in leads:
        gap = block.count(b"\n", position, lead)
        line, position = line + gap, lead
        marks.append((lead, line))
        if first >= 0 and gap > 2 * CAUSE_WINDOW:
            found.append((_back(block, first, CAUSE_WINDOW, start), _forward(block, previous, CAUSE_WINDOW, end)))
            first = -1
        if first < 0:
            first = lead
        previous = lead
    if first >= 0:
        found.append((_back(block, first, CAUSE_WINDOW, start), _forward(block, previous, CAUSE_WINDOW, end)))
    last_line = block.rfind(b"\n", start, end - 1) + 1 or start
    tail = _back(block, last_line, CAUSE_WINDOW, start)
    found.append((tail, end))
    return Plan(_union(found), marks, tail)


def _forward(block: bytes, position: int, lines: int, end: int) -> int:
    """Where the line `lines` lines after the one starting at `position` ends (past its newline)."""
    for _ in range(lines + 1):
        newline = block.find(b"\n", position, end)
        if newline < 0:
            return end
        position = newline + 1
    return position


def _back(block: bytes, position: int, lines: int, floor: int) -> int:
    """Where the line `lines` lines before the one starting at `position` starts (not before floor)."""
    for _ in range(lines):
        if position <= floor:
            return floor
        position = block.rfind(b"\n", floor, position - 1) + 1 or floor
    return position


def _union(found: list[Stretch]) -> list[Stretch]:
    """The ranges (low, high) as few sorted ranges apart, overlapping and touching ones joined."""
    out: list[Stretch] = []
    for start, end in sorted(found):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
