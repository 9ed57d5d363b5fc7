"""Find the few lines of a block worth matching, at the speed of a multi-pattern search.

Hyperscan (when installed) scans a whole block for every signature and trigger word at once and
says which patterns hit which lines. Without it, one Python alternation finds candidate lines and
every exact signature is tried on them. Either way the matcher confirms each hit with Python's
`re`, so a prefilter may over-report but never under-report.

Cause-evidence patterns live in a second database: they match healthy chatter (`DataLoader`,
`Compiling`) and only count near an entry's own lines, so the scanner runs them only over the
stretches of a log near such lines (see `triage.engine.cause_lines`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache, cached_property
from typing import Any, Protocol

from triage.engine.compiled import CASE_SENSITIVE_TRIGGERS, TRIGGER_PATTERNS, CompiledKB
from triage.engine.context import CONTEXT_TRIGGERS
from triage.engine.digits import digit_patterns, digit_reads, regex_sources
from triage.engine.repeats import unbounded_repeats

TRIGGER = -1
"""The id reported for a trigger word (a line that fuzzy signatures should look at)."""
CONTEXT = -2
"""The id reported for a line that shows what was running (see `triage.engine.context`)."""
TRIGGER_OFFSET = 1 << 30
"""Hyperscan ids must be non-negative: trigger words are numbered from here."""
CONTEXT_OFFSET = 1 << 29
"""... and context patterns from here."""


Candidate = tuple[int, int, "set[int] | None"]
"""(start, end, ids): byte offsets of a line in the block (without its newline), and the signature
indices that may match it (TRIGGER for trigger words; None means 'try all'). A plain tuple: noisy logs
have hundreds of thousands of candidates, and tuples are the cheapest thing Python builds."""


class Prefilter(Protocol):
    name: str

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        """Candidate lines of block[start:end], which begins at a line start; offsets are block's."""
        ...

    def cause_candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        """Lines of block[start:end] that cause-evidence signatures may match, with those signatures."""
        ...

    def digit_candidates(self, masked: bytes) -> tuple[list[Candidate], list[Candidate]]:
        """Lines of a block with its digits masked whose match may depend on their digits (see
        `triage.engine.digits`): those any pattern may tell apart, and those a bare code may."""
        ...


def _hyperscan_pattern(pattern: str) -> bytes:
    # Hyperscan has no named groups, and leading or trailing `.*` only multiplies match events.
    pattern = re.sub(r"\(\?P<\w+>", "(", unbounded_repeats(pattern))
    pattern = re.sub(r"^(?:\.\*\??)+|(?:\.\*\??)+$", "", pattern)
    return pattern.encode("utf-8")


def _lines_of(block: bytes, offsets: dict[int, set[int] | None], end: int) -> list[Candidate]:
    """Candidate lines from their start offsets, in block order, none reaching past `end`."""
    out = []
    for line_start in sorted(offsets):
        line_end = block.find(b"\n", line_start, end)
        out.append((line_start, end if line_end < 0 else line_end, offsets[line_start]))
    return out


class HyperscanPrefilter:
    name = "hyperscan"

    def __init__(self, kb: CompiledKB) -> None:
        import hyperscan  # deferred: optional dependency, and slow to import when unused

        self._hyperscan, self._kb = hyperscan, kb
        self._sets = _pattern_sets(hyperscan, kb)
        self._main = _HyperscanSet(hyperscan, kb, self.name, self._sets[self.name], None)
        causes = frozenset(_own_and_cause(kb)[1])
        self._causes = _HyperscanSet(hyperscan, kb, CAUSES_STATE, self._sets[CAUSES_STATE], causes)

    @cached_property
    def _digits(self) -> tuple[_HyperscanSet, _HyperscanSet]:
        # Built on first use (by the native scan path); the KB cache then carries them too.
        named, codes = (
            _HyperscanSet(self._hyperscan, self._kb, name, self._sets[name], None) for name in DIGITS_STATES
        )
        return named, codes

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        return self._main.candidates(block, start, end)

    def cause_candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        return self._causes.candidates(block, start, end)

    def digit_candidates(self, masked: bytes) -> tuple[list[Candidate], list[Candidate]]:
        named, codes = self._digits
        return named.candidates(masked), codes.candidates(masked)


CAUSES_STATE = "hyperscan-causes"
"""The KB cache's name for the cause-evidence database."""
DIGITS_STATES = ("hyperscan-digits", "hyperscan-codes")


def _pattern_sets(hyperscan: Any, kb: CompiledKB) -> dict[str, Callable[[], list[Pattern]]]:
    """The patterns of each hyperscan database, by its name in the KB cache, the largest first."""
    own, causes = _own_and_cause(kb)
    _, caseless = _flags(hyperscan)

    def widened(which: int) -> Callable[[], list[Pattern]]:
        return lambda: [(p, n, caseless) for n, p in enumerate(_widened(kb)[which])]

    return {
        HyperscanPrefilter.name: lambda: _main_patterns(hyperscan, kb, own),
        CAUSES_STATE: lambda: _cause_patterns(hyperscan, kb, causes),
        DIGITS_STATES[0]: widened(0),
        DIGITS_STATES[1]: widened(1),
    }


def compile_databases(kb: CompiledKB) -> None:
    """Compile the hyperscan databases that `kb` does not carry yet, side by side: hyperscan's
    compile releases the GIL, so a cold build takes about as long as its largest database, not
    their sum (seconds on a KB of a thousand signatures). Nothing to do without hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return
    from concurrent.futures import ThreadPoolExecutor  # with logging, 15 ms of start-up; cold builds only

    pending = {
        name: patterns for name, patterns in _pattern_sets(hyperscan, kb).items() if name not in kb.prefilter_state
    }
    with ThreadPoolExecutor(max_workers=max(1, len(pending))) as pool:
        states = list(pool.map(lambda patterns: _compile(hyperscan, patterns()), pending.values()))
    kb.prefilter_state.update(zip(pending, states))


def _widened(kb: CompiledKB) -> tuple[list[str], list[str]]:
    return _widened_of(regex_sources(kb))


DIGIT_READS_STATE = "digit-reads"
"""The KB cache's name for what `digit_reads_of` finds: parsing every pattern again costs 0.1 s."""


def digit_reads_of(kb: CompiledKB) -> tuple[list[list[str]], list[str], list[str]]:
    """The probes of each widened named pattern, in the order of `digit_candidates`'s ids, and the
    bare codes as written and widened (see `triage.engine.digits.digit_reads`)."""
    state = kb.prefilter_state.get(DIGIT_READS_STATE)
    if state is None:
        probes, codes = digit_reads(list(regex_sources(kb)))
        named, widened_codes = _widened(kb)
        reads = [[probes[pattern] for pattern in named], codes, widened_codes]
        state = kb.prefilter_state[DIGIT_READS_STATE] = (b"", [json.dumps(reads)])
    probes_by_id, codes, widened_codes = json.loads(state[1][0])
    return probes_by_id, codes, widened_codes


@cache
def _widened_of(sources: tuple[str, ...]) -> tuple[list[str], list[str]]:
    return digit_patterns(list(sources))


Compilable = tuple[bytes, int, int]
"""(expression, id, flags) for hyperscan."""
Pattern = tuple[str, int, int]
"""(regex, id, flags) before translation for hyperscan."""


def _own_and_cause(kb: CompiledKB) -> tuple[list[int], list[int]]:
    """The exact signatures that match an entry's own lines, and those that are cause evidence."""
    own = [i for i in kb.exact if kb.signatures[i].cause is None]
    return own, [i for i in kb.exact if kb.signatures[i].cause is not None]


def _flags(hyperscan: Any) -> tuple[int, int]:
    # MULTILINE: the block holds many lines, and `^`/`$` in a signature mean a line's start and end.
    common = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_ALLOWEMPTY | hyperscan.HS_FLAG_MULTILINE
    return common, common | hyperscan.HS_FLAG_CASELESS


def _main_patterns(hyperscan: Any, kb: CompiledKB, own: list[int]) -> list[Pattern]:
    """Every entry's own signature, trigger word and context pattern."""
    common, caseless = _flags(hyperscan)
    patterns = [(kb.signatures[i].regex_source or "", i, caseless) for i in own]
    patterns += [(p, TRIGGER_OFFSET + n, caseless) for n, p in enumerate(TRIGGER_PATTERNS)]
    offset = TRIGGER_OFFSET + len(TRIGGER_PATTERNS)
    patterns += [(p, offset + n, common) for n, p in enumerate(CASE_SENSITIVE_TRIGGERS)]
    patterns += [(p, CONTEXT_OFFSET + n, caseless) for n, p in enumerate(CONTEXT_TRIGGERS)]
    return patterns


def _cause_patterns(hyperscan: Any, kb: CompiledKB, causes: list[int]) -> list[Pattern]:
    _, caseless = _flags(hyperscan)
    return [(kb.signatures[i].regex_source or "", i, caseless) for i in causes]


class _HyperscanSet:
    """One hyperscan database over some patterns, and a Python pass for those it refuses."""

    def __init__(
        self,
        hyperscan: Any,
        kb: CompiledKB,
        name: str,
        patterns: Callable[[], list[Pattern]],
        fallback_ids: frozenset[int] | None,
    ) -> None:
        state = kb.prefilter_state.get(name)
        if state is None:
            state = _compile(hyperscan, patterns())
            kb.prefilter_state[name] = state
        blob, unsupported = state
        self._db = hyperscan.loadb(blob, mode=hyperscan.HS_MODE_BLOCK) if blob else None
        if self._db is not None:
            self._db.scratch = hyperscan.Scratch(self._db)
        # Patterns hyperscan refuses still get found, by a slower Python pass over the block.
        self._fallback = _PythonAlternation(unsupported, fallback_ids)

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        end = len(block) if end is None else end
        out = self._scan(block, start, end) if self._db is not None else []
        extra = self._fallback.candidates(block, start, end)
        if not extra:
            return out
        merged = {candidate[0]: candidate for candidate in out}
        for candidate in extra:
            merged[candidate[0]] = candidate
        return [merged[line_start] for line_start in sorted(merged)]

    def _scan(self, block: bytes, start: int, end: int) -> list[Candidate]:
        events: list[tuple[int, int]] = []
        append = events.append
        # A memoryview scans the range without copying it: blocks are megabytes.
        view = memoryview(block)[start:end]
        # hyperscan types `scan` as taking bytes or str; its C scanner reads any buffer, a memoryview too.
        self._db.scan(view, match_event_handler=lambda ident, _from, to, _flags, _ctx: append((to, ident)))  # type: ignore[union-attr]
        events.sort()  # block mode reports by end offset already; this keeps the grouping safe regardless
        out: list[Candidate] = []
        line_end = -1
        ids: set[int] = set()
        rfind, find = block.rfind, block.find
        for to, ident in events:
            to += start
            if to > line_end:
                last = to - 1 if to > start else start  # the match's last byte decides its line
                line_end = find(b"\n", last, end)
                if line_end < 0:
                    line_end = end
                ids = set()
                out.append((rfind(b"\n", start, last) + 1 or start, line_end, ids))
            ids.add(ident if ident < CONTEXT_OFFSET else TRIGGER if ident >= TRIGGER_OFFSET else CONTEXT)
        return out


def _compile(hyperscan: Any, patterns: list[Pattern]) -> tuple[bytes, list[str]]:
    """Compile patterns into one database, serialized for the KB cache (empty bytes when none is left)."""
    compiled = [(_hyperscan_pattern(pattern), ident, flags) for pattern, ident, flags in patterns]
    if not compiled:
        return b"", []
    try:
        return hyperscan.dumpb(_database(hyperscan, compiled)), []  # the usual case: one compile
    except hyperscan.error:
        refused = set(_refused(hyperscan, compiled))
    unsupported = [
        pattern if flags & hyperscan.HS_FLAG_CASELESS else f"(?-i:{pattern})"
        for (pattern, _, flags), (_, ident, _) in zip(patterns, compiled)
        if ident in refused
    ]
    kept = [item for item in compiled if item[1] not in refused]
    return (hyperscan.dumpb(_database(hyperscan, kept)) if kept else b""), unsupported


def _database(hyperscan: Any, items: list[Compilable]) -> Any:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[item[0] for item in items],
        ids=[item[1] for item in items],
        elements=len(items),
        flags=[item[2] for item in items],
    )
    return database


def _refused(hyperscan: Any, items: list[Compilable]) -> list[int]:
    """Ids of the expressions hyperscan cannot compile, found by halving: a few compiles per refused
    pattern instead of one per pattern."""
    try:
        _database(hyperscan, items)
        return []
    except hyperscan.error:
        if len(items) == 1:
            return [items[0][1]]
    middle = len(items) // 2
    return _refused(hyperscan, items[:middle]) + _refused(hyperscan, items[middle:])


class _PythonAlternation:
    def __init__(self, patterns: list[str], ids: frozenset[int] | None = None) -> None:
        self._ids = ids
        """What a line it finds may match: None for 'try all'."""
        self._regex = (
            re.compile(
                "|".join(f"(?:{_hyperscan_pattern(p).decode()})" for p in patterns).encode(),
                re.IGNORECASE | re.MULTILINE,  # the block holds many lines: `^`/`$` are line boundaries
            )
            if patterns
            else None
        )

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        if self._regex is None:
            return []
        end = len(block) if end is None else end
        offsets: dict[int, set[int] | None] = {}
        for match in self._regex.finditer(block, start, end):
            offsets[block.rfind(b"\n", start, match.start()) + 1 or start] = (
                None if self._ids is None else set(self._ids)
            )
        return _lines_of(block, offsets, end)


class PythonPrefilter:
    name = "re"

    def __init__(self, kb: CompiledKB) -> None:
        own, causes = _own_and_cause(kb)
        patterns = [kb.signatures[i].regex_source or "" for i in own]
        cased = [f"(?-i:{pattern})" for pattern in CASE_SENSITIVE_TRIGGERS]
        self._alternation = _PythonAlternation(patterns + list(TRIGGER_PATTERNS) + cased + list(CONTEXT_TRIGGERS))
        self._causes = _PythonAlternation([kb.signatures[i].regex_source or "" for i in causes], frozenset(causes))
        self._kb = kb

    @cached_property
    def _digits(self) -> tuple[_PythonAlternation, _PythonAlternation]:
        named, codes = _widened(self._kb)
        return _PythonAlternation(named), _PythonAlternation(codes)

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        return self._alternation.candidates(block, start, end)

    def cause_candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        return self._causes.candidates(block, start, end)

    def digit_candidates(self, masked: bytes) -> tuple[list[Candidate], list[Candidate]]:
        named, codes = self._digits
        return named.candidates(masked), codes.candidates(masked)


def build_prefilter(kb: CompiledKB, *, prefer: str | None = None) -> Prefilter:
    """Hyperscan where it imports, else Python's `re` (about 10x slower on big logs, same results)."""
    if prefer != "re":
        try:
            return HyperscanPrefilter(kb)
        except ImportError:
            if prefer == "hyperscan":
                raise
    return PythonPrefilter(kb)
