"""The incremental scanner: feed it bytes from any number of sources, ask it for ranked diagnoses.

Lines may arrive for hours (tail mode), so all state is bounded: per entry a few evidence lines and
values, plus a cache of fuzzy verdicts per distinct line template.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from triage.engine.cause_lines import CAUSE_ONLY, CauseLines, NearLeads
from triage.engine.compiled import CompiledKB
from triage.engine.correlate import correlate
from triage.engine.error_lines import WARNED, error_kind, warned
from triage.engine.counts import Counts
from triage.engine.evidence import EntryEvidence, Sighting
from triage.engine.held_lines import END, HeldLines
from triage.engine.normalize import decode_line, shape_key, without_colours
from triage.engine.observe import observe
from triage.engine.context import JobContext
from triage.engine.prefilter import CONTEXT, Prefilter, build_prefilter
from triage.engine.rank import build_result
from triage.engine.job_ranks import key_rank_span, rank_of_source
from triage.engine.lines import Scope, jump_marks, line_finder
from triage.engine.matcher import Hit, LineMatcher, extract
from triage.engine.scan_part import ScanPart
from triage.engine.shapes import MATCH_WINDOW, Shape, Support
from triage.engine.slices import SCAN_SLICE, line_slices, long_line_windows, overlong_cut
from triage.engine.tallies import Tally, count_tally
from triage.engine.unclaimed import TAIL_BYTES, ErrorLine, UnclaimedErrors, numbered_tail
from triage.engine.wrapped import wrapped_hits
from triage.results import ScanResult
from triage.sources import binary_line

MAX_LINE = 1 << 20
"""A line longer than this is cut and matched in pieces, so one 30 MB line cannot exhaust memory."""
SHAPE_CACHE_LIMIT = 20_000
"""Distinct line shapes remembered; a log of millions of distinct error lines starts over when full."""
CONTEXT_ONLY: frozenset[int] | set[int] = frozenset({CONTEXT})


@dataclass
class _Source:
    name: str
    rank: int | None
    pending: bytes = b""
    lines: int = 0
    tail: bytes = b""
    """The last bytes seen: where the log ended."""
    near: NearLeads = field(default_factory=NearLeads)


class Scanner:
    def __init__(self, kb: CompiledKB, prefilter: Prefilter | None = None) -> None:
        self.kb = kb
        self.prefilter = prefilter or build_prefilter(kb)
        self.evidence: dict[int, EntryEvidence] = {}
        self.unclaimed = UnclaimedErrors()
        self.context = JobContext()
        """Error lines that no entry's own signature matched: what the safety net reports."""
        self.errors: list[str] = []
        self.lines = 0
        self.bytes = 0
        self.candidate_lines = 0
        self._templates_absorbed = 0
        self._before = (0, 0)
        self._sources: dict[str, _Source] = {}
        self._order = 0
        self._matcher = LineMatcher(kb)
        self._shapes: dict[bytes, Shape] = {}
        """Digit-masked line -> what it matched: a warning repeated a million times is decoded and
        matched once, its repeats only counted (or, when it matched nothing, skipped)."""
        with_causes = frozenset(s.entry for s in kb.signatures if s.cause is not None)
        self._counts = Counts(self.evidence, with_causes)
        self._cause_lines = CauseLines(kb, self.prefilter, self._matcher)
        self._scope = Scope(kb, self.prefilter, self._cause_lines, self._shapes, with_causes, self._counts)
        self._finder = line_finder(self._scope, self.context, self.unclaimed)
        self._started = time.perf_counter()

    # -- input ---------------------------------------------------------------------------------

    def feed(self, data: bytes, source: str = "-", *, start: int = 0, end: int | None = None) -> set[int]:
        """Scan more bytes of `source`, data[start:end]; returns the indices of entries that fired for
        the first time. `end`: a line end; the caller reads data[end:] again (see `reads_to_line_ends`)."""
        end = len(data) if end is None else end
        state = self._source(source)
        self.unclaimed.ended.discard(source)  # it grew: where it stopped (`finish`, a quiet spell) is not its end
        self.bytes += end - start
        data, start, end = without_colours(data, start, end)
        tail = data[max(start, end - TAIL_BYTES) : end]
        state.tail = tail if len(tail) == TAIL_BYTES else (state.tail + tail)[-TAIL_BYTES:]
        newly: set[int] = set()
        if state.pending and end - start <= SCAN_SLICE:
            # A read's worth joined to the carried-over line: cheaper than a one-line block of its own.
            data, state.pending = state.pending + data[start:end], b""
            start, end = 0, len(data)
        if state.pending:
            # Complete the carried-over line with this chunk's first line; the rest is scanned in place, not copied.
            first = data.find(b"\n", start, end)
            if first < 0:
                state.pending += data[start:end]
                return self._cut_overlong(state)
            head, state.pending = state.pending + data[start : first + 1], b""
            newly |= self._scan_block(state, head, 0, len(head), complete=True)
            start = first + 1
        cut = data.rfind(b"\n", start, end)
        for begin, stop in line_slices(data, start, cut + 1):  # nothing when the chunk holds no line end
            newly |= self._scan_block(state, data, begin, stop, complete=True)
        state.pending = data[cut + 1 : end] if cut >= 0 else data[start:end]
        return newly | self._cut_overlong(state)

    def finish(self, source: str = "-") -> set[int]:
        """The source ended: scan its last line even without a trailing newline."""
        state = self._source(source)
        self.unclaimed.ended.add(source)
        if not state.pending:
            return set()
        block, state.pending = state.pending + b"\n", b""
        return self._scan_block(state, block, 0, len(block), complete=True)

    def feed_text(self, text: str, source: str = "-") -> set[int]:
        """Convenience for callers holding text (tests, the TUI): scan it as a complete source."""
        return self.feed(text.encode("utf-8"), source) | self.finish(source)

    def note_error(self, message: str) -> None:
        self.errors.append(message)

    @property
    def matched_lines(self) -> int:
        """How many lines have matched so far: re-ranking is only worth it when this has grown."""
        return self._order

    def part(self) -> ScanPart:
        """Everything this scanner found, to be absorbed by another (see `absorb`)."""
        self._note_tails()
        counts = (self.lines, self.bytes, self.candidate_lines, self._order, self._matcher.templates, self._before)
        return ScanPart(self.evidence, self.unclaimed, self.context, *counts)

    def forget_found(self, source: str) -> None:
        """Forget what was counted, not where entries' own and cause lines were: a worker reads the lines
        before its part so, that a cause's line near its start counts as in one scan (`triage.parallel`)."""
        self._before = (self._source(source).lines, self._order)
        self.evidence.clear()  # in place: the counts hold it
        self.unclaimed.clear()
        self._shapes.clear()
        # The shape table counts the lines of shapes it knows as repeats: they are new again now.
        self._finder = line_finder(self._scope, self.context, self.unclaimed)
        self.lines = self.bytes = self.candidate_lines = 0

    def absorb(self, part: ScanPart, source: str) -> None:
        """Take in the scan of the next stretch of `source`, as if this scanner had read it itself.

        Parts must arrive in file order: line numbers and arrival order continue from what this
        scanner has already seen of the source.
        """
        state = self._source(source)
        lines, orders = state.lines - part.before[0], self._order - part.before[1]
        for entry, evidence in part.evidence.items():
            self.evidence.setdefault(entry, EntryEvidence()).merge(evidence, lines, orders)
        self.unclaimed.merge(part.unclaimed, lines, orders)
        self.context.merge(part.context)
        state.lines += part.lines
        self.lines, self.bytes = self.lines + part.lines, self.bytes + part.bytes
        self.candidate_lines += part.candidate_lines
        self._templates_absorbed += part.templates
        self._order += part.orders - part.before[1]

    # -- output --------------------------------------------------------------------------------

    def result(self, *, top: int | None = None, min_confidence: float = 0.0) -> ScanResult:
        self._note_tails()
        built = build_result(self.kb, self.evidence, self.unclaimed, self.context, min_confidence=min_confidence)
        result = correlate(built, top=top)
        stats = result.stats
        stats.lines = self.lines + sum(1 for s in self._sources.values() if s.pending)
        stats.bytes, stats.candidate_lines, stats.prefilter = self.bytes, self.candidate_lines, self.prefilter.name
        stats.seconds = round(time.perf_counter() - self._started, 4)
        stats.templates = self._matcher.templates + self._templates_absorbed
        result.errors = list(self.errors)
        return result

    # -- internals -----------------------------------------------------------------------------

    def _note_tails(self) -> None:
        for state in self._sources.values():
            if state.tail:
                self.unclaimed.tails[state.name] = numbered_tail(state.tail, state.lines + (1 if state.pending else 0))

    def _source(self, name: str) -> _Source:
        state = self._sources.get(name)
        if state is None:
            state = self._sources[name] = _Source(name=name, rank=rank_of_source(name))
        return state

    def _cut_overlong(self, state: _Source) -> set[int]:
        if len(state.pending) < MAX_LINE:
            return set()
        # Match a read's worth of the overlong line now (joined to the next, it was copied): same line number.
        pending, state.pending = state.pending, state.pending[overlong_cut(state.pending) :]
        return self._scan_block(state, pending, 0, len(pending) - len(state.pending), complete=False)

    def _scan_block(self, state: _Source, block: bytes, start: int, end: int, *, complete: bool) -> set[int]:
        """Scan the whole lines of block[start:end]."""
        newly: set[int] = set()
        position = start
        newlines_before = 0
        shapes = self._shapes
        found, marks, held, tallies = self._finder.lines(state.near, state.lines, block, (start, end))
        # Line numbers the line finder already counted, to jump to instead of counting again.
        mark, marks_left = (start, 0), iter(marks)
        tallies_left = deque(tallies)
        for line_start, line_end, ids, causes, known in found:
            while tallies_left and tallies_left[0].start < line_start:
                self._count_tally(state, block, held, tallies_left.popleft())
            if held.next < line_start:
                self._counts.held(held.before(line_start), held, state, self._order)
            raw = block[line_start:line_end]
            if ids is None or CONTEXT in ids:
                # The line finder's count first: the lines skipped since the last are not counted again.
                mark, counted = jump_marks(mark, marks_left, (position, newlines_before), line_start)
                position, newlines_before = observe(
                    self.context, self.unclaimed, (state.name, state.lines), block, (line_start, raw), counted
                )
            if ids == CONTEXT_ONLY:
                if causes is None:
                    continue
                ids = CAUSE_ONLY
            long = len(raw) > MATCH_WINDOW
            key = known or (b"" if long else shape_key(raw))
            shape = None if long else shapes.get(key)
            if causes is None and shape is not None and shape.ids == ids and shape.quiet:
                continue  # the hot path on noisy logs: no decoding, no line counting
            # Line numbers are counted only up to lines that need one; the rest is counted in bulk.
            mark, (position, newlines_before) = jump_marks(mark, marks_left, (position, newlines_before), line_start)
            newlines_before += block.count(b"\n", position, line_start)
            position = line_start
            line_number = state.lines + newlines_before + 1
            if long:
                newly |= self._match_long_line(state, line_number, raw)
            elif shape is not None and shape.ids == ids:
                extra = self._extra(state, line_number, key, raw, causes) if ids is not None else ()
                if extra or not shape.quiet:
                    self._repeat(shape, state, line_number, raw, extra)
            else:
                following = (block, line_end + 1, end) if line_end < end else None
                newly |= self._match_shape(state, line_number, (raw, key), ids, causes, following)
        for tally in tallies_left:
            self._count_tally(state, block, held, tally)
        self._counts.held(held.before(END), held, state, self._order)
        if complete:
            # Only the rest of the block is left to count: the lines up to `position` already are.
            for mark in marks[-1:]:
                if mark[0] > position:
                    position, newlines_before = mark
            count = newlines_before + block.count(b"\n", position, end)
            state.lines += count
            self.lines += count
        self._finder.settle(block)
        return newly

    def _count_tally(self, state: _Source, block: bytes, held: HeldLines, tally: Tally) -> None:
        """Count the own lines the shape table tallied (see `triage.engine.tallies`), after the held
        cause lines before them: as `_repeat` of each line would."""
        if held.next < tally.start:
            self._counts.held(held.before(tally.start), held, state, self._order)
        count_tally(self._counts, tally, block, (self._order, state.name, state.rank, state.lines + 1))
        self._order += tally.lines

    def _match_shape(
        self,
        state: _Source,
        line_number: int,
        line: tuple[bytes, bytes],
        ids: set[int] | frozenset[int] | None,
        causes: set[int] | None,
        following: tuple[bytes, int, int] | None,
    ) -> set[int]:
        """Match or count a line (raw bytes, digit-masked key) flagged with main
        and cause ids; `following` is (block, start, end) of what follows it, for a message wrapped
        onto the next line."""
        raw, key = line
        if binary_line(raw):
            return set()  # chance bytes of a binary stretch: its "oom" or "error" says nothing
        extra = self._extra(state, line_number, key, raw, causes) if ids is not None else ()
        if ids is CAUSE_ONLY:
            # A line only a cause pattern flagged is cause evidence and nothing else: not numbered.
            if extra:
                self._counts.supports(extra, Sighting(self._order, state.name, line_number, raw, state.rank))
            return set()
        shape = self._shapes.get(key)
        if shape is not None and shape.ids == ids:
            self._repeat(shape, state, line_number, raw, extra)
            return set()
        shape, found_first = self._match_line(state, line_number, line, ids, extra)
        if not shape.matched and following is not None:
            # A message wrapped onto the next line: the line's meaning depends on it, not a shape to remember.
            wrapped = wrapped_hits(self.prefilter, self._matcher, raw, *following)
            if wrapped is not None:
                return self._record(state, line_number, *wrapped)[0]
        self._remember(key, shape)
        return found_first

    def _extra(
        self, state: _Source, line_number: int, key: bytes, raw: bytes, causes: set[int] | None
    ) -> tuple[Support, ...]:
        """What a line supports by the cause database, of the entries whose leads are near it. A
        line flagged 'try all' is matched against causes anyway."""
        return () if causes is None else state.near.supports(line_number, self._cause_lines.supports(key, raw, causes))

    def _remember(self, key: bytes, shape: Shape) -> None:
        if len(self._shapes) >= SHAPE_CACHE_LIMIT:
            self._shapes.clear()
        self._shapes[key] = shape

    def _match_long_line(self, state: _Source, line_number: int, raw: bytes) -> set[int]:
        newly: set[int] = set()
        for start, end in long_line_windows(raw):
            window = raw[start:end].replace(b"\r", b"\n")  # a progress bar's pieces, apart
            pieces = self._cause_lines.lines(window, [(0, len(window))], self.prefilter.candidates(window))
            for piece_start, piece_end, ids, causes, _ in pieces:
                piece = window[piece_start:piece_end]
                newly |= self._match_shape(state, line_number, (piece, shape_key(piece)), ids, causes, None)
        return newly

    def _match_line(
        self,
        state: _Source,
        line_number: int,
        line: tuple[bytes, bytes],
        ids: set[int] | frozenset[int] | None,
        extra: tuple[Support, ...] = (),
    ) -> tuple[Shape, set[int]]:
        """Match a line (raw bytes, shape key) of a shape not seen before: what it matched, for its
        repeats to count, and the entries that fired for the first time."""
        raw, key = line
        self.candidate_lines += 1
        text = decode_line(raw)
        hits = self._matcher.exact(text, ids) + self._matcher.fuzzy(text)
        unclaimed = None
        # A wrapper's line (EZ9999, ERR00100) may carry the inner message: the safety net may know it.
        if not any(hit.signature.cause is None and not self.kb.entries[hit.signature.entry].generic for hit in hits):
            unclaimed = self._note_unclaimed(state, line_number, text)
        newly, primary, supports = (
            self._record(state, line_number, text, hits, extra) if hits or extra else (set(), (), ())
        )
        return Shape(ids, primary, supports, unclaimed, key_rank_span(key)), newly

    def _note_unclaimed(self, state: _Source, line_number: int, text: str) -> ErrorLine | None:
        kind = error_kind(text) or (WARNED if warned(text) else None)
        if kind is None:
            return None
        self._order += 1
        return self.unclaimed.note_line(text, kind, self._order, (state.name, line_number, state.rank))

    def _record(
        self, state: _Source, line_number: int, text: str, hits: list[Hit], extra: tuple[Support, ...] = ()
    ) -> tuple[set[int], tuple[int, ...], tuple[Support, ...]]:
        """Count a newly shaped matched line for every entry it hit, and the `extra` causes the cause
        database found it supports: the newly fired entries, the entries it matched and the causes
        its hits support, for its repeats."""
        if any(hit.signature.cause is None for hit in hits):
            self._order += 1  # only an entry's own lines are numbered: cause lines are found only near them
        seen = Sighting(self._order, state.name, line_number, text, state.rank)
        newly: set[int] = set()
        primary: dict[int, None] = {}
        supports: list[Support] = []
        for hit in hits:
            signature = hit.signature
            evidence = self.evidence.setdefault(signature.entry, EntryEvidence())
            values = extract(signature, text, hit.match)
            if signature.cause is None:
                newly |= {signature.entry} if not evidence.signature_quality else set()
                quality = evidence.signature_quality
                quality[signature.index] = max(quality.get(signature.index, 0.0), hit.quality)
                evidence.add_values(values)
                primary.setdefault(signature.entry)
            else:
                supports.append((signature.entry, signature.cause, signature.index, hit.quality, values))
        for entry in primary:
            self._counts.primary(entry, seen, new_shape=True)
        self._counts.supports(supports, seen)
        self._counts.supports(extra, seen)
        return newly, tuple(primary), tuple(supports)

    def _repeat(
        self, shape: Shape, state: _Source, line_number: int, raw: bytes, extra: tuple[Support, ...] = ()
    ) -> None:
        """A line of a known shape: bump counters; its text and rank are read only if shown."""
        if shape.primary or shape.unclaimed is not None:
            self._order += 1
        seen = Sighting(self._order, state.name, line_number, raw, state.rank, shape.rank_at)
        for entry in shape.primary:
            self._counts.primary(entry, seen, new_shape=False)
        self._counts.supports(shape.supports, seen, shape.primary)
        self._counts.supports(extra, seen, shape.primary)
        if shape.unclaimed is not None:
            shape.unclaimed.count += 1
