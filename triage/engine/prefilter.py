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
from triage.engine import digits
from triage.engine.byte_alternation import byte_alternation
from triage.engine.digits import DigitReads, digit_analysis, regex_source_runs
from triage.engine.repeats import unbounded_repeats
from triage.kb.byte_patterns import text_escapes_as_characters

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


def hyperscan_expression(pattern: str) -> bytes:
    # Hyperscan has no named groups, and leading or trailing `.*` only multiplies match events.
    pattern = re.sub(r"\(\?P<\w+>", "(", unbounded_repeats(text_escapes_as_characters(pattern)))
    # A named group's backreference loses its name with it: any text of the line matches more.
    pattern = re.sub(r"\(\?P=\w+\)", lambda _: "(?:[^\\n]*)", pattern)
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


def _pattern_sets(hyperscan: Any, kb: CompiledKB) -> dict[str, Callable[[], list[list[Pattern]]]]:
    """The patterns of each hyperscan database, by its name in the KB cache, the largest first, in
    runs of one KB directory each (see `triage.engine.hs_parts`)."""
    own, causes = _own_and_cause(kb)
    _, caseless = _flags(hyperscan)

    def widened(which: int) -> Callable[[], list[list[Pattern]]]:
        def runs() -> list[list[Pattern]]:
            numbered: list[list[Pattern]] = []
            for run in _widened_runs(regex_source_runs(kb))[which]:
                first = sum(len(done) for done in numbered)
                numbered.append([(p, first + n, caseless) for n, p in enumerate(run)])
            return numbered

        return runs

    return {
        HyperscanPrefilter.name: lambda: _by_directory(kb, _main_patterns(hyperscan, kb, own)),
        CAUSES_STATE: lambda: _by_directory(kb, _cause_patterns(hyperscan, kb, causes)),
        DIGITS_STATES[0]: widened(0),
        DIGITS_STATES[1]: widened(1),
    }


def _by_directory(kb: CompiledKB, patterns: list[Pattern]) -> list[list[Pattern]]:
    """Patterns in runs of one KB directory each; the fixed words (ids from CONTEXT_OFFSET on) come
    first and go with the first run."""
    return kb.directory_runs(patterns, lambda pattern: pattern[1] if pattern[1] < CONTEXT_OFFSET else None)


def compile_databases(kb: CompiledKB) -> None:
    """Compile the hyperscan databases that `kb` does not carry yet, side by side: hyperscan's
    compile releases the GIL, so a cold build takes about as long as its largest database, not
    their sum (seconds on a KB of a thousand signatures). Nothing to do without hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return
    from concurrent.futures import ThreadPoolExecutor  # with logging, 15 ms of start-up; cold builds only

    from triage.engine import hs_parts

    pending = {
        name: patterns for name, patterns in _pattern_sets(hyperscan, kb).items() if name not in kb.prefilter_state
    }
    with ThreadPoolExecutor(max_workers=max(1, len(pending))) as pool:
        states = list(pool.map(lambda runs: hs_parts.compile_runs(hyperscan, runs()), pending.values()))
    kb.prefilter_state.update(zip(pending, states))


def _widened(kb: CompiledKB) -> tuple[list[str], list[str]]:
    named, codes = _widened_runs(regex_source_runs(kb))
    return [p for run in named for p in run], [p for run in codes for p in run]


DIGIT_READS_STATE = "digit-reads"
"""The KB cache's name for what `digit_reads_of` finds: parsing every pattern again costs 0.1 s."""


def digit_reads_of(kb: CompiledKB) -> tuple[list[list[str]], list[str], list[str]]:
    """The probes of each widened named pattern, in the order of `digit_candidates`'s ids, and the
    bare codes as written and widened (see `triage.engine.digits.digit_reads`)."""
    state = kb.prefilter_state.get(DIGIT_READS_STATE)
    if state is None:
        analysed = _analysed_runs(regex_source_runs(kb))
        probes: dict[str, list[str]] = {}
        for _, _, run_probes, _ in analysed:  # as one pass over all the runs' patterns would find them
            for pattern, found in run_probes.items():
                probes.setdefault(pattern, []).extend(found)
        codes = list(dict.fromkeys(code for *_, run_codes in analysed for code in run_codes))
        named, widened_codes = _widened(kb)
        reads = [[probes[pattern] for pattern in named], codes, widened_codes]
        state = kb.prefilter_state[DIGIT_READS_STATE] = ((), [json.dumps(reads)])
    probes_by_id, codes, widened_codes = json.loads(state[1][0])
    return probes_by_id, codes, widened_codes


@cache
def _widened_runs(runs: tuple[tuple[str, ...], ...]) -> tuple[list[list[str]], list[list[str]]]:
    """`digit_patterns` of the runs' patterns in order, each run's widened patterns not seen in an
    earlier run kept apart: a run then numbers its patterns as it does in any KB set it starts."""
    named_runs: list[list[str]] = []
    code_runs: list[list[str]] = []
    named_seen: set[str] = set()
    codes_seen: set[str] = set()
    for named, codes, _, _ in _analysed_runs(runs):
        named_runs.append([p for p in named if p not in named_seen])
        code_runs.append([p for p in codes if p not in codes_seen])
        named_seen.update(named)
        codes_seen.update(codes)
    return named_runs, code_runs


@cache
def _analysed_runs(runs: tuple[tuple[str, ...], ...]) -> list[DigitReads]:
    """`digit_analysis` of each run, cached on disk by the run's patterns (and the code that reads them)."""
    from triage.kb.cache_files import by_content, code_version  # cold builds only

    version = code_version(digits)

    def decode(content: bytes) -> DigitReads:
        named, widened_codes, probes, codes = json.loads(content)
        return list(named), list(widened_codes), dict(probes), list(codes)

    def analysed(run: tuple[str, ...]) -> DigitReads:
        def build() -> bytes:
            return json.dumps(digit_analysis(list(run))).encode()

        return by_content("digits", version + "\n".join(run).encode(), build, decode)

    return [analysed(run) for run in runs]


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
    """Every trigger word, context pattern and entry's own signature (the fixed words first: they
    belong to the first run, see `_by_directory`)."""
    common, caseless = _flags(hyperscan)
    patterns = [(p, TRIGGER_OFFSET + n, caseless) for n, p in enumerate(TRIGGER_PATTERNS)]
    offset = TRIGGER_OFFSET + len(TRIGGER_PATTERNS)
    patterns += [(p, offset + n, common) for n, p in enumerate(CASE_SENSITIVE_TRIGGERS)]
    patterns += [(p, CONTEXT_OFFSET + n, caseless) for n, p in enumerate(CONTEXT_TRIGGERS)]
    return patterns + [(kb.signatures[i].candidate_source or "", i, caseless) for i in own]


def _cause_patterns(hyperscan: Any, kb: CompiledKB, causes: list[int]) -> list[Pattern]:
    _, caseless = _flags(hyperscan)
    return [(kb.signatures[i].candidate_source or "", i, caseless) for i in causes]


class _HyperscanSet:
    """The hyperscan databases of some patterns (one per run), and a Python pass for those refused."""

    def __init__(
        self,
        hyperscan: Any,
        kb: CompiledKB,
        name: str,
        runs: Callable[[], list[list[Pattern]]],
        fallback_ids: frozenset[int] | None,
    ) -> None:
        state = kb.prefilter_state.get(name)
        if state is None:
            from triage.engine import hs_parts  # a KB built without `compile_databases` (tests)

            state = hs_parts.compile_runs(hyperscan, runs())
            kb.prefilter_state[name] = state
        blobs, unsupported = state
        self._dbs = [hyperscan.loadb(blob, mode=hyperscan.HS_MODE_BLOCK) for blob in blobs]
        for database in self._dbs:
            database.scratch = hyperscan.Scratch(database)
        # Patterns hyperscan refuses still get found, by a slower Python pass over the block.
        self._fallback = _PythonAlternation(unsupported, fallback_ids)

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        end = len(block) if end is None else end
        out = self._scan(block, start, end) if self._dbs else []
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
        for database in self._dbs:
            # hyperscan types `scan` as taking bytes or str; its C scanner reads any buffer, a memoryview too.
            database.scan(view, match_event_handler=lambda ident, _from, to, _flags, _ctx: append((to, ident)))
        events.sort()  # by end offset: one database reports in that order, several interleave
        out: list[Candidate] = []
        line_end = -1
        ids: set[int] = set()
        rfind, find = block.rfind, block.find
        for to, ident in events:
            to += start
            last = to - 1 if to > start else start  # the match's last byte decides its line
            if last > line_end:  # not `to`: a match whose last byte is the line's newline is of that line
                line_end = find(b"\n", last, end)
                if line_end < 0:
                    line_end = end
                ids = set()
                out.append((rfind(b"\n", start, last) + 1 or start, line_end, ids))
            ids.add(ident if ident < CONTEXT_OFFSET else TRIGGER if ident >= TRIGGER_OFFSET else CONTEXT)
        return out


class _PythonAlternation:
    def __init__(self, patterns: list[str], ids: frozenset[int] | None = None) -> None:
        self._ids = ids
        """What a line it finds may match: None for 'try all'."""
        self._regex = byte_alternation([hyperscan_expression(p) for p in patterns]) if patterns else None

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[Candidate]:
        if self._regex is None:
            return []
        end = len(block) if end is None else end
        offsets: dict[int, set[int] | None] = {}
        for match in self._regex.finditer(block, start, end):
            # Its last byte decides its line, as hyperscan's: a pattern read past a launcher's prefix
            # (`\s*Killed`, see `anchors`) may start at the newline before the line it matches.
            last = match.end() - 1 if match.end() > match.start() else match.start()
            offsets[block.rfind(b"\n", start, last) + 1 or start] = None if self._ids is None else set(self._ids)
        return _lines_of(block, offsets, end)


class PythonPrefilter:
    name = "re"

    def __init__(self, kb: CompiledKB) -> None:
        own, causes = _own_and_cause(kb)
        patterns = [kb.signatures[i].candidate_source or "" for i in own]
        cased = [f"(?-i:{pattern})" for pattern in CASE_SENSITIVE_TRIGGERS]
        self._alternation = _PythonAlternation(patterns + list(TRIGGER_PATTERNS) + cased + list(CONTEXT_TRIGGERS))
        self._causes = _PythonAlternation([kb.signatures[i].candidate_source or "" for i in causes], frozenset(causes))
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
