"""The scanner's lines through the native shape table: work that grows with distinct shapes.

The compiled table (`_lineshapes.c`) walks a block's lines and hashes each with its digits masked.
A line of a shape known to need nothing is skipped there; a line of a shape that only cause
evidence matches waits there until the scan knows which leads are near, then comes back apart, to be
counted in runs (`triage.engine.counts`); a line of a shape that is only an entry's own line, and
needs nothing but counting, is counted there in tallies (`triage.engine.tallies`); every other line
comes back to be matched. Only the first line of each shape not seen before goes through the prefilter, packed with
the others into one small buffer; once the scanner has matched them, each shape is registered by
what it needed.

A shape stands for all its lines only where no pattern can tell their digits apart (see
`triage.engine.digits`): lines that one can are matched one by one, as if each were new. So are
lines that feed what the scanner still collects line by line (the job context, traceback frames),
and lines whose meaning depends on the next one (a wrapped message): those are never registered.
"""

from __future__ import annotations

from collections.abc import Hashable
from operator import itemgetter
from enum import Enum
from functools import cached_property

from triage.engine import _lineshapes
from triage.engine.cause_lines import CAUSE_ONLY, CauseGroups, NearLeads, leads, merge
from triage.engine.context import MAX_LINES as CONTEXT_LINES
from triage.engine.context import JobContext
from triage.engine.digit_groups import DigitGroups
from triage.engine.evidence import WAITING_LINES
from triage.engine.held_lines import NO_HELD_LINES, NOT_HELD, HeldLines, HeldShape, Seen
from triage.engine.hex_ids import HexIds
from triage.engine.job_ranks import rank_span
from triage.engine.lines import Found, Scope
from triage.engine.normalize import DIGITS_TO_ZERO, decode_line
from triage.engine.packed_lines import Fresh, Ids, long_line_flags, match_packed
from triage.engine.prefilter import CONTEXT, Candidate
from triage.engine.shapes import MATCH_WINDOW, Shape
from triage.engine.tallies import Retries, tally_leads, tally_of, tally_pending
from triage.engine.unclaimed import FRAME, MAX_FRAMES, UnclaimedErrors

QUIET_GROUPS = 1 << 14
"""Digit groups remembered as judged, before starting over."""
NATIVE_SHAPES = 1 << 16
"""Shapes the table remembers before it starts over: about 2 MB, however many distinct lines."""
NEWLINE = ord("\n")
LATER_SHAPES = 64
"""Tallied shapes registered again once more of their cause evidence is spent, at most (see `NativeLines._tally`)."""
EARLY_QUIET = 256
"""Lines of a block repeating its new shapes beyond which those that need nothing are registered
before the block is walked (see `NativeLines._quiet_first`)."""

Needs = tuple[Ids, set[int] | None]
"""(main prefilter ids, or CAUSE_ONLY where the main prefilter flags nothing; cause ids or None)."""


class Apart(Enum):
    APART = "apart"


APART = Apart.APART
"""What a shape whose digits may tell its lines apart needs: each line, what its digit group needs."""


class NativeLines:
    def __init__(self, scope: Scope, context: JobContext, unclaimed: UnclaimedErrors) -> None:
        self._scope = scope
        self._context = context
        self._unclaimed = unclaimed
        self._table = _lineshapes.Shapes(limit=NATIVE_SHAPES, long_line=MATCH_WINDOW)
        self._known: list[Needs | Apart | None] = []
        """What each registered shape needs, by its id in the table (None for a quiet shape)."""
        self._repeated: set[int] = set()
        """Where the first lines of the last block's new shapes are that repeated there apart."""
        self._held_as: list[HeldShape] = []
        """What the held lines of each registered shape support and where they write their rank, by its id."""
        self._counted: list[Shape | None] = []
        """What each shape registered TALLIED matched, by its id (None for the others)."""
        self._later: Retries[tuple[bytes, Needs, bool]] = Retries(LATER_SHAPES)
        """Shapes registered TALLIED (line, needs, whether a digit group) that hold cause evidence not spent."""
        self._active_groups: list[tuple[int, int, Needs]] = []
        """The digit groups the last block registered ACTIVE: where a line of each is, what it needs."""
        self._groups = CauseGroups()
        self._fresh: list[Fresh] = []
        """The first lines of the last block's new shapes, to register once the scanner has matched them."""
        self._matched: dict[int, Fresh] = {}
        """What the first lines of the block's new shapes matched, by where they start, when
        `_quiet_first` matched them already."""
        self._hex_ids = HexIds()
        self._group_verdicts: dict[Hashable, bool] = {}
        """The digit groups judged so far, by whether they need nothing."""
        self._registered_groups: set[Hashable] = set()
        """Those registered with the table: it skips a quiet one's lines, and hands back the others' by the group's id."""

    def lines(self, near: NearLeads, lines_before: int, block: bytes, span: tuple[int, int]) -> Found:
        seen = self._table.classify(block, *span)
        if sum(line[3] < -1 for line in seen) > EARLY_QUIET:
            seen = self._quiet_first(block, span, seen)
        main: list[Candidate] = []
        causes: list[Candidate] = []
        marks = []
        for (line_start, line_end, index, _), (ids, cause_ids) in zip(seen, self._needs(block, seen)):
            if not isinstance(ids, frozenset):  # CAUSE_ONLY: the main prefilter flags nothing
                main.append((line_start, line_end, ids))
            if cause_ids is not None:
                # Kept wherever it is: where no lead is near, `NearLeads.supports` drops what it supports.
                causes.append((line_start, line_end, cause_ids))
            marks.append((line_start, index))
        lines = self._table.lines
        # The block's end, after all its newlines: the scan need not count them again.
        marks.append((span[1], lines - (span[1] > span[0] and block[span[1] - 1] != NEWLINE)))
        tallies = [tally_of(tally, self._counted) for tally in self._table.tallies()]
        if not self._scope.cause_lines.enabled:
            return merge(main, []), marks, NO_HELD_LINES, tallies
        found, keys = leads(block, main, self._scope.shapes, self._scope.with_causes)
        index_of = dict(marks)
        leads_at = [(entries, index_of[start]) for start, entries in found]
        tallied = tally_leads(tallies, self._scope.with_causes)
        near.note(sorted(leads_at + tallied, key=itemgetter(1)) if tallied else leads_at, lines_before, lines)
        held = self._held(near, lines_before)
        return (
            merge(main, causes, keys),
            marks,
            HeldLines(held, block, lines_before + 1, self._held_as, self._scope.cause_lines.supports),
            tallies,
        )

    def settle(self, block: bytes) -> None:
        for line_start, line_end, ids, cause_ids, alike in self._fresh:
            if not (alike or line_start in self._repeated):
                # Its lines still come back one by one, to be matched by digit group; only a shape
                # that repeated is registered, so that a log of distinct lines does not fill the
                # table with them (nor is a line of megabytes copied out here for nothing).
                continue
            raw = block[line_start:line_end]
            kind = self._kind(raw, ids, cause_ids) if alike else _lineshapes.ACTIVE
            if kind is None:
                continue
            group = self._group(raw, cause_ids) if kind == _lineshapes.CAUSE else -1
            if group is None:
                kind, group = _lineshapes.QUIET, -1  # its cause patterns confirm nothing on it
            if self._settle_ids(raw, line_start, quiet=alike and kind == _lineshapes.QUIET):
                continue
            if alike and kind == _lineshapes.ACTIVE and self._tally(raw, (ids, cause_ids), group=False):
                continue
            needs = None if kind == _lineshapes.QUIET else (ids, cause_ids) if alike else APART
            held_as = (
                (cause_ids, rank_span(raw.translate(DIGITS_TO_ZERO)[:200].decode("latin-1")))
                if kind == _lineshapes.CAUSE and cause_ids is not None
                else NOT_HELD
            )
            # A shape whose digits tell its lines apart: the table groups them by those digits.
            runs = self._digit_groups.runs(raw) if needs is APART else None
            if runs is not None:
                self._register(raw, (_lineshapes.GROUPED, 0), needs, held_as, runs=runs)
            else:
                supports = sorted(self._groups[group]) if kind == _lineshapes.CAUSE else None
                self._register(raw, (kind, max(group, 0)), needs, held_as, supports=supports)
        for raw, needs, group in self._later.due(self._scope.counts.changes):
            self._tally(raw, needs, group=group)
        for start, end, needs in self._active_groups:
            # Its lines' shape is known now that the scan has matched them.
            self._tally(block[start:end], needs, group=True)
        self._active_groups = []
        self._fresh = []
        self._hex_ids.block_done()

    def _tally(self, raw: bytes, needs: Needs, *, group: bool) -> bool:
        """Register the shape of an ACTIVE line (or its digit group) TALLIED, if the table may count
        its lines itself (see `tallies`); whether it did. What its lines support of causes not spent
        yet (a repeat of such a line counts, or waits) is counted from the table's held lines, as a
        cause shape's are; it is registered again after the next blocks, with less to hold."""
        ids, cause_ids = needs
        key = raw.translate(DIGITS_TO_ZERO)
        shape = self._scope.shapes.get(key)
        if shape is None or shape.ids != ids:
            return False
        flagged = self._scope.cause_lines.supports(key, raw, cause_ids) if cause_ids is not None else ()
        pending = tally_pending(shape, flagged, self._scope.counts.spent)
        if pending is None:
            return False
        at = shape.rank_at if isinstance(shape.rank_at, tuple) else None
        ranks = at or (-1, -1)
        held_as: HeldShape = (cause_ids or set(), at) if pending else NOT_HELD
        cause_group = self._groups.of(frozenset(pending)) if pending else 0
        if pending:
            self._later.add((raw, needs, group))
        entries = sorted(self._scope.with_causes.intersection(shape.primary))
        table, kind = self._table, _lineshapes.TALLIED
        registered = (
            table.register_group(raw, kind, *ranks, entries, pending or None, cause_group)
            if group
            else table.register(raw, kind, cause_group, False, 0, 0, *ranks, entries, pending or None)
        )
        self._note(registered, needs, held_as, shape)
        return True

    def _settle_ids(self, raw: bytes, start: int, *, quiet: bool) -> bool:
        """Whether the block's new line at `start` holds hex ids (see `hex_ids`): it never repeats,
        so it is kept out of the table; but if it needed nothing, its shape with the ids masked is
        registered, and the table skips the lines that differ from it only in their ids."""
        if self._hex_ids.masked(start) is None:
            return False
        if quiet and self._hex_ids.learn(start):
            self._register(raw, (_lineshapes.QUIET, 0), None, NOT_HELD, masked=True)
        return True

    def _register(
        self,
        raw: bytes,
        kind: tuple[int, int],
        needs: Needs | Apart | None,
        held_as: HeldShape,
        *,
        masked: bool = False,
        runs: tuple[int, int] = (0, 0),
        supports: list[int] | None = None,
    ) -> None:
        """Register a shape with the table (kind and group) and what it needs, under its id."""
        self._note(self._table.register(raw, *kind, masked, *runs, -1, -1, None, supports), needs, held_as)

    def _note(self, shape: int, needs: Needs | Apart | None, held_as: HeldShape, counted: Shape | None = None) -> None:
        """What the shape the table registered under this id needs (-1: it registered none: a
        masked line in which it finds no id, a group of a shape it does not group)."""
        if shape < 0:
            return
        if shape == len(self._known):
            self._known.append(needs)
            self._held_as.append(held_as)
            self._counted.append(counted)
        elif len(self._table) == 1:
            # The table was full and started over.
            self._known, self._held_as, self._counted = [needs], [held_as], [counted]
            self._hex_ids.forget()
            self._registered_groups.clear()
        else:
            self._known[shape], self._held_as[shape], self._counted[shape] = needs, held_as, counted

    def _quiet_first(self, block: bytes, span: tuple[int, int], seen: list[Seen]) -> list[Seen]:
        """Where a block's new shapes repeat within it, those that need nothing are registered before
        it is walked, and the block is classified again: their repeats are then skipped in C, not
        handed back (a log's first block teaches the table most of its chatter; each worker of a
        split file starts with an empty table). What the other new shapes' first lines matched is
        kept for `_needs`."""
        firsts = [line for line in seen if line[3] == -1]
        for fresh in self._match(block, firsts):
            start, end, ids, cause_ids, alike = fresh
            if alike and ids is CAUSE_ONLY and cause_ids is None:
                if not self._settle_ids(block[start:end], start, quiet=True):
                    self._register(block[start:end], (_lineshapes.QUIET, 0), None, NOT_HELD)
            else:
                self._matched[start] = fresh
        return self._table.classify(block, *span)

    def _held(self, near: NearLeads, lines_before: int) -> list[Seen]:
        """The lines of cause shapes that may count: near a lead of an entry they support, or among
        the block's last lines, where a lead of the next block may reach them. Of those last lines
        that no lead of this block reaches, a later lead can only find the last WAITING_LINES per
        entry (`CauseWindow` keeps no more waiting): the table keeps the last WAITING_LINES of each
        group of shapes, which holds those of each of the group's entries."""
        return self._table.held(
            self._groups.reach(near, lines_before), near.kept_from - lines_before - 1, WAITING_LINES
        )

    def _needs(self, block: bytes, seen: list[Seen]) -> list[Needs]:
        """What each line the table handed back needs: its registered shape's, or (matched here)
        its shape's first line's in this block, or its digit group's where digits may tell the
        lines of its shape apart."""
        firsts = [n for n, line in enumerate(seen) if line[3] == -1]
        matched, self._matched = self._matched, {}
        new = [seen[n] for n in firsts if seen[n][0] not in matched]
        matched |= {fresh[0]: fresh for fresh in self._match(block, new)}
        self._fresh = [matched[seen[n][0]] for n in firsts]
        fresh = dict(zip(firsts, self._fresh))
        needs: list[Needs] = []
        apart: list[int] = []
        self._repeated = set()
        for n, (_, _, _, shape) in enumerate(seen):
            known = self._known[shape] if shape >= 0 else None
            if known is None:  # a quiet shape is never handed back: not registered
                first = fresh[n if shape == -1 else -2 - shape]
                known = first[2:4]
                if shape != -1 and not first[4]:
                    self._repeated.add(first[0])
                    known = APART
            if known is APART:
                apart.append(n)
                known = (None, None)  # written below
            needs.append(known)
        self._match_apart(block, [seen[n] for n in apart], apart, needs)
        return needs

    def _match_apart(self, block: bytes, lines: list[Seen], at: list[int], needs: list[Needs]) -> None:
        """What lines whose digits may tell them from their shape's first line need (each written
        to needs[at[n]]): one line of each digit group is matched, the group's later lines follow it."""
        if not lines:
            return
        groups = self._digit_groups
        keys = [groups.key(block[start:end]) for start, end, _, _ in lines]
        found: dict[Hashable, Needs] = {}
        alone: dict[Hashable, Seen] = {}
        for key, line in zip(keys, lines):
            known = groups.get(key)
            if known is None:
                alone.setdefault(key, line)
            else:
                found[key] = known
        for key, fresh in zip(alone, self._match(block, list(alone.values()), judge=False)):
            found[key] = fresh[2:4]
            groups.put(key, found[key])
        for key, n, (start, end, _, _) in zip(keys, at, lines):
            needs[n] = found[key]
            if key in self._registered_groups:
                continue
            quiet = self._group_verdicts.get(key)
            if quiet is None:
                if len(self._group_verdicts) >= QUIET_GROUPS:
                    self._group_verdicts.clear()
                quiet = self._group_verdicts[key] = self._needs_nothing(block[start:end], found[key])
            # Once their shape is GROUPED, the table skips a quiet group's lines, and hands back the others' by its id.
            shape = self._table.register_group(block[start:end], _lineshapes.QUIET if quiet else _lineshapes.ACTIVE)
            if shape >= 0:
                self._registered_groups.add(key)
                self._note(shape, None if quiet else found[key], NOT_HELD)
                if not quiet:
                    self._active_groups.append((start, end, found[key]))

    def _needs_nothing(self, raw: bytes, needs: Needs) -> bool:
        """Whether a line (and so its digit group) needs nothing: no pattern flagged it, or only
        cause patterns that confirm nothing on it."""
        ids, cause_ids = needs
        if ids is not CAUSE_ONLY:
            return False
        return cause_ids is None or not self._scope.cause_lines.supports(raw.translate(DIGITS_TO_ZERO), raw, cause_ids)

    @cached_property
    def _digit_groups(self) -> DigitGroups[Needs]:
        # Made on the first such line: most logs have none, and some tests build KBs of their own.
        groups: DigitGroups[Needs] = DigitGroups(self._scope.kb, self._scope.prefilter)
        self._table.set_codes(groups.code_strings or ())
        return groups

    def _match(self, block: bytes, new: list[Seen], *, judge: bool = True) -> list[Fresh]:
        """Prefilter ids of new lines: (start, end, ids, cause ids, alike), alike telling (when asked
        to `judge`) whether a line's shape may stand for its other lines. Lines that differ from
        another only in hex ids follow it where it needs nothing (see `hex_ids`)."""
        if not judge:
            return self._match_each(block, new, judge=False)
        new, followers = self._hex_ids.split(block, new)
        out = self._match_each(block, new, judge=True)
        if followers:
            needs_nothing = {fresh[0] for fresh in out if fresh[2] is CAUSE_ONLY and fresh[3] is None and fresh[4]}
            again = [line for line, first in followers if first is not None and first not in needs_nothing]
            out += [
                (start, end, CAUSE_ONLY, None, True)
                for (start, end, _, _), first in followers
                if first is None or first in needs_nothing
            ]
            out += self._match_each(block, again, judge=True)
        return out

    def _match_each(self, block: bytes, new: list[Seen], *, judge: bool) -> list[Fresh]:
        """`_match` of each line. A line longer than a match window is never registered: it is
        scanned where it lies, as on the prefilter path."""
        short = [line for line in new if line[1] - line[0] <= MATCH_WINDOW]
        packed = iter(match_packed(self._scope, self._hex_ids, block, short, judge=judge))
        return [
            next(packed) if end - start <= MATCH_WINDOW else (start, end, *self._long_flags(block, start, end), False)
            for start, end, _, _ in new
        ]

    def _long_flags(self, block: bytes, start: int, end: int) -> tuple[Ids, set[int] | None]:
        """What the prefilters flag on a line longer than a match window (see `long_line_flags`);
        the carriage-return pieces that need nothing are registered so."""
        pieces = self._table.segments(block, start, end) if block.find(b"\r", start, end) >= 0 else None
        ids, cause_ids, quiet = long_line_flags(self._scope, self._hex_ids, block, (start, end), pieces)
        for low, high in quiet:
            self._register(block[low:high], (_lineshapes.QUIET, 0), None, NOT_HELD)
        return ids, cause_ids

    def _kind(self, raw: bytes, ids: Ids, cause_ids: set[int] | None) -> int | None:
        """How the table should treat a matched shape's lines; None: hand each one back."""
        if ids is None or CONTEXT in ids:
            if self._context.lines_seen < CONTEXT_LINES:
                return None
            if len(self._unclaimed.frames) < MAX_FRAMES and FRAME.search(decode_line(raw)):
                return None
        if ids is not CAUSE_ONLY and ids != {CONTEXT}:
            shape = self._scope.shapes.get(raw.translate(DIGITS_TO_ZERO))
            if shape is None or shape.ids != ids:
                return None  # not remembered: its meaning depends on the next line
            if not shape.quiet:
                return _lineshapes.ACTIVE
        return _lineshapes.QUIET if cause_ids is None else _lineshapes.CAUSE

    def _group(self, raw: bytes, cause_ids: set[int] | None) -> int | None:
        """The group of a cause shape: of the entries its lines support (None when none)."""
        supports = self._scope.cause_lines.supports(raw.translate(DIGITS_TO_ZERO), raw, cause_ids or set())
        entries = frozenset(support[0] for support in supports)
        return self._groups.of(entries) if entries else None
