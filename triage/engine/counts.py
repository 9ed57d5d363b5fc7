"""Matched lines counted into each entry's evidence, and cause lines only where they may count.

The scanner counts the lines it matches one by one. The cause lines that the native shape table
held back (see `triage.engine.held_lines`) come in runs instead: between two lines the scan sees,
no entry's own line arrives, so every line of a run meets the same windows. A run is counted in
one pass that reads a line's text only where it is shown or waits: on a noisy log that is most of
the lines that still reach Python, and most of them wait in vain.

What a cause's line adds is its signature's quality, its extracted values and, the first time, a
listed line: a line of evidence already counted adds nothing. So such a line is spent: it neither
counts nor waits, and the lines of other causes that wait are not pushed out of their window by a
warning's repeats. Only which lines count first, and which wait, is worked out, not how many count.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from operator import itemgetter
from bisect import bisect_right
from typing import Protocol

from triage.engine.cause_lines import NearLeads
from triage.engine.evidence import WAITING_LINES, CauseWindows, EntryEvidence, Sighting, counts_at
from triage.engine.held_lines import HeldLines, Seen
from triage.engine.shapes import Support


RunRanks = tuple[Callable[[], list[Sighting]], dict[int | None, int]]
"""Of a run of own lines: how to make the first line of each rank, in line order, and each rank's
last line number."""


class Source(Protocol):
    """The source a run of held lines comes from."""

    name: str
    rank: int | None
    near: NearLeads


class Counts:
    """Each entry's evidence, and the windows its causes' lines count in."""

    def __init__(self, evidence: dict[int, EntryEvidence], with_causes: frozenset[int]) -> None:
        self.evidence = evidence
        self._with_causes = with_causes
        self._windows = CauseWindows()
        self.changes = 0
        """How many times a cause's evidence was counted: what is spent changes only with it."""
        self._later: dict[tuple[int, str], tuple[Callable[[int], Sighting], list[tuple[int, Support]]]] = {}
        """Per (entry, source): the last run's lines that wait, not yet sighted (see `_wait_later`)."""

    def primary(self, entry: int, seen: Sighting, *, new_shape: bool) -> None:
        """Count one of the entry's own lines, and the cause lines that waited for it."""
        self.evidence[entry].add_primary(seen, new_shape=new_shape)
        if entry in self._with_causes:
            if self._later:
                self._wait_now(entry, seen.source)
            for support, waited in self._windows[entry].note_primary(seen):
                self._add(support, waited)

    def run(self, entry: int, count: int, ends: tuple[Sighting, Sighting], ranks: RunRanks) -> None:
        """Count `count` own lines of an entry that nothing else came between (a tally, see
        `triage.engine.tallies`), as `primary` of each would: `ends` are the first and the last,
        `ranks` how to make the first line of each rank, in line order (asked only where cause
        lines wait for one), and each rank's last line number."""
        first, last = ends
        firsts, lasts = ranks
        self.evidence[entry].add_run(count, first, last)
        if entry in self._with_causes:
            if self._later:
                self._wait_now(entry, first.source)
            window = self._windows[entry]
            for seen in firsts() if window.waits(first.source) else ():
                for support, waited in window.note_primary(seen):
                    self._add(support, waited)
            window.note_last(first.source, lasts)

    def supports(
        self, supports: tuple[Support, ...] | list[Support], seen: Sighting, own: tuple[int, ...] = ()
    ) -> None:
        """Count a line's cause evidence where an own line of its entry is near (the line itself,
        for the entries it is an own line of: `own`); else it waits."""
        for support in supports:
            if self.spent(support):
                # Counted before: it changes nothing now, and waiting would only push the lines of
                # other causes, which may still count, out of the window.
                continue
            if support[0] in own:
                self._add(support, seen)
                continue
            if self._later:
                self._wait_now(support[0], seen.source)
            if self._windows[support[0]].near(seen, (support, seen)):
                self._add(support, seen)

    def spent(self, support: Support) -> bool:
        """Whether counting this support would change nothing (see `EntryEvidence.holds`)."""
        evidence = self.evidence.get(support[0])
        return evidence is not None and evidence.holds(support)

    def _count_first_lines(
        self,
        counted: dict[tuple[int, int], int],
        found_of: dict[int, tuple[Support, ...]],
        sighting: Callable[[int], Sighting],
    ) -> dict[tuple[int, int], int]:
        """Count each support at its first line that counts, in run order: the lines listed and the
        values kept are those a line-by-line count would keep, for one call per support. Returns,
        per (shape, k-th support) of the run, the line from which it is spent: its lines there
        and after neither count nor wait, as in `supports`."""
        live = {(shape, k): support for shape, found in found_of.items() for k, support in enumerate(found)}
        spent: dict[tuple[int, int], int] = {}
        for (shape, k), n in sorted(counted.items(), key=itemgetter(1)):
            entry = found_of[shape][k][0]
            self._add(found_of[shape][k], partial(sighting, n))
            evidence = self.evidence[entry]
            for key, support in list(live.items()):
                if support[0] == entry and evidence.holds(support):
                    # The line's later supports are passed over from this line on, the others
                    # (earlier on the line, or of other shapes) from the next.
                    spent[key] = n if key[0] == shape and key[1] > k else n + 1
                    del live[key]
        return spent

    def _wait_later(
        self, entry: int, source: str, sighting: Callable[[int], Sighting], kept: list[tuple[int, Support]]
    ) -> None:
        """Let a run's last lines of an entry wait without sighting them yet: on a noisy log the
        next run's lines push them out before an own line of the entry comes, most of the time.
        Those of the run before that are sighted now, as many as can outlast these."""
        self._wait_now(entry, source, WAITING_LINES - len(kept))
        self._later[entry, source] = (sighting, kept)

    def _wait_now(self, entry: int, source: str, most: int = WAITING_LINES) -> None:
        """Sight the lines of an entry that wait without a sighting, the last `most` of them, and
        let them wait in its window, before anything reads it."""
        later = self._later.pop((entry, source), None)
        if later is None or most <= 0:
            return
        sighting, kept = later
        window = self._windows[entry]
        for n, support in kept[-most:]:
            seen = sighting(n)
            window.wait(seen, (support, seen))

    def held(self, run: list[Seen], held: HeldLines, source: Source, order: int) -> None:
        """Count a run of held cause lines, all after the `order`-th numbered line and before the
        next: as `supports` would, line by line, with a sighting made only for a line that is
        listed or waits (of those that wait, only the last few per entry can still count).

        No own line arrives within a run, so each entry's windows close at fixed lines: a line of a
        shape that names no rank counts up to the last line its entry's window reaches for the
        source's rank, and waits after it; only its first line that counts is read. Only shapes that
        write a rank into the line are read line by line. The lines after the last window has closed
        can only wait, and of those only each entry's last few matter, which are found walking back
        from the run's end (on a noisy log, most of the run).
        """
        # Where each shape first comes in the run: walked in C (the dict keeps the last write of
        # each key, so the run is read backwards); a noisy run holds hundreds of thousands of lines.
        shapes = list(map(itemgetter(3), run))
        firsts = dict(zip(reversed(shapes), range(len(shapes) - 1, -1, -1)))
        # A support counted before neither counts nor waits (see `supports`).
        found_of = {
            shape: tuple(s for s in held.supports(run[n], shape) if not self.spent(s)) for shape, n in firsts.items()
        }
        entries = {support[0] for found in found_of.values() for support in found}
        if not entries:
            return
        reaches = (self._windows[entry].reach_of(source.name, None) for entry in entries)
        closes = max((reach for reach in reaches if reach is not None), default=-1)
        cut = bisect_right(run, closes - held.first, key=itemgetter(2))  # the lines a window may still reach
        sightings: dict[int, Sighting] = {}
        name, rank = source.name, source.rank  # as they are now: a line that waits may be sighted later

        def sighting(n: int) -> Sighting:
            # One per line: a line listed for one cause is not listed again for another.
            seen = sightings.get(n)
            if seen is None:
                seen = sightings[n] = held.sighting(run[n], order, name, rank)
            return seen

        counted: dict[tuple[int, int], int] = {}  # (shape, k-th support) -> its first line that counts
        waits, ranked = self._by_shape(run, held, source, cut, (firsts, found_of), counted)
        waiting: dict[int, list[tuple[int, int, Support]]] = {}  # entry -> (line, k, support)
        if ranked:
            self._ranked_lines(run, held, source, cut, ranked, found_of, counted, waiting)
        spent = self._count_first_lines(counted, found_of, sighting)
        after = _last_waiting(run, cut, found_of, spent)
        for entry in entries:
            kept = after.get(entry, [])
            if len(kept) < WAITING_LINES and (entry in waits or entry in waiting):
                most = WAITING_LINES - len(kept)
                before = _waiting_before(shapes, cut, waits.get(entry, []), found_of, most, spent)
                before += [(n, k, s) for n, k, s in waiting.get(entry, []) if _waits(spent, shapes[n], k, n)]
                before = sorted(before)[-most:]
                kept = [(n, support) for n, _, support in before] + kept
            if kept:
                self._wait_later(entry, name, sighting, kept[-WAITING_LINES:])

    def _by_shape(
        self,
        run: list[Seen],
        held: HeldLines,
        source: Source,
        cut: int,
        of_run: tuple[dict[int, int], dict[int, tuple[Support, ...]]],
        counted: dict[tuple[int, int], int],
    ) -> tuple[dict[int, list[tuple[int, int, int]]], set[int]]:
        """Count the first line before `cut` of each shape that names no rank, if its entry's window
        reaches it; returns, per entry, from which line on each (shape, k-th support) waits
        instead, and the shapes that name a rank (left to `_ranked_lines`)."""
        firsts, found_of = of_run
        waits: dict[int, list[tuple[int, int, int]]] = {}
        ranked: set[int] = set()
        for shape, first in firsts.items():
            if first >= cut:
                continue
            if held.names_rank(shape):
                ranked.add(shape)
                continue
            for k, support in enumerate(found_of[shape]):
                reach = self._windows[support[0]].reach_of(source.name, source.rank)
                ends = 0 if reach is None else bisect_right(run, reach - held.first, 0, cut, key=itemgetter(2))
                if first < ends:
                    counted[shape, k] = first
                if ends < cut:
                    waits.setdefault(support[0], []).append((shape, k, ends))
        return waits, ranked

    def _ranked_lines(
        self,
        run: list[Seen],
        held: HeldLines,
        source: Source,
        cut: int,
        ranked: set[int],
        found_of: dict[int, tuple[Support, ...]],
        counted: dict[tuple[int, int], int],
        waiting: dict[int, list[tuple[int, int, Support]]],
    ) -> None:
        """The lines before `cut` of shapes that write a rank, one by one: whether each counts
        depends on its own rank."""
        for n, (start, _, index, shape) in enumerate(run[:cut]):
            if shape not in ranked:
                continue
            line = held.first + index
            # Unlike `supports`, no lead is asked first: a line far from its entry's leads waits in
            # vain, which changes nothing (its window drops it before a lead's line can count it).
            for k, support in enumerate(found_of[shape]):
                ranks = self._windows[support[0]].reaching(source.name, line)
                if counts_at(ranks, partial(held.rank, start, shape, source.rank)):
                    counted.setdefault((shape, k), n)
                else:
                    waiting.setdefault(support[0], []).append((n, k, support))

    def _add(self, support: Support, seen: Sighting | Callable[[], Sighting]) -> None:
        entry, cause, index, quality, values = support
        evidence = self.evidence.get(entry)
        if evidence is None:  # not `setdefault`: that would build an EntryEvidence for every line counted
            evidence = self.evidence[entry] = EntryEvidence()
        elif evidence.holds(support):
            return  # the repeats of a cause's line, by far the most of them, change nothing
        evidence.add_support(seen, cause, index, quality)
        evidence.add_values(values)
        self.changes += 1


def _waits(spent: dict[tuple[int, int], int], shape: int, k: int, n: int) -> bool:
    """Whether line `n` of a run, of this shape, may still wait for its k-th support: not once it
    is spent there (see `Counts._count_first_lines`)."""
    return n < spent.get((shape, k), n + 1)


def _waiting_before(
    shapes: list[int],
    cut: int,
    waits: list[tuple[int, int, int]],
    found_of: dict[int, tuple[Support, ...]],
    most: int,
    spent: dict[tuple[int, int], int],
) -> list[tuple[int, int, Support]]:
    """An entry's last `most` (line, k, support) that wait among the first `cut` lines of a run, in
    run order: `waits` says, per shape and support, from which line on its lines wait, and `spent`
    from which line on they no longer do."""
    if not waits:
        return []
    from_line = {(shape, k): ends for shape, k, ends in waits}
    by_shape: dict[int, list[int]] = {}
    for shape, k, _ in waits:
        by_shape.setdefault(shape, []).append(k)
    found: list[tuple[int, int, Support]] = []
    for n in range(cut - 1, min(from_line.values()) - 1, -1):
        for k in reversed(by_shape.get(shapes[n], ())):
            if n >= from_line[shapes[n], k] and _waits(spent, shapes[n], k, n):
                found.append((n, k, found_of[shapes[n]][k]))
        if len(found) >= most:
            break
    return found[::-1]


def _last_waiting(
    run: list[Seen], cut: int, found_of: dict[int, tuple[Support, ...]], spent: dict[tuple[int, int], int]
) -> dict[int, list[tuple[int, Support]]]:
    """Each entry's last WAITING_LINES (line, support) pairs among run[cut:], in run order, of the
    supports not yet spent there."""
    pairs: dict[int, list[tuple[int, Support]]] = {}
    # An entry whose every support was spent before `cut` has no line to find: the walk does not wait for it.
    left = {
        support[0]
        for shape, found in found_of.items()
        for k, support in enumerate(found)
        if _waits(spent, shape, k, cut)
    }
    for n in range(len(run) - 1, cut - 1, -1):
        shape = run[n][3]
        for k in range(len(found_of[shape]) - 1, -1, -1):
            support = found_of[shape][k]
            if not _waits(spent, shape, k, n):
                continue
            kept = pairs.setdefault(support[0], [])
            if len(kept) < WAITING_LINES:
                kept.append((n, support))
                if len(kept) == WAITING_LINES:
                    left.discard(support[0])
        if not left:
            break
    return {entry: kept[::-1] for entry, kept in pairs.items()}
