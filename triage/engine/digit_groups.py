"""Lines whose digits a pattern tells apart, grouped by the digits such a pattern can read.

A shape (a line with its digits masked) stands for all its lines only where no pattern names a
digit (see `triage.engine.digits`); the lines of a shape that `507015` or `EI0006` may match were
each matched alone. Yet most of their digits no such pattern can read: a timestamp, a PID. So the
digit runs of such a shape are sorted once, by the probe of each digit-naming pattern that may
match it (`digits.probe`): runs where a digit a pattern names can fall, runs where only a bare code
can be (whose digits matter only where one of the codes is in them), and the rest. Lines of the
shape that agree on the first and on which codes are in the second are alike to every pattern as
`re` confirms it: they form one group, and what the prefilters flag on one line (never less than
what matches) stands for every line of the group.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from functools import cached_property
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Generic, TypeVar

from triage.engine.compiled import CompiledKB
from triage.engine.digits import ANY_DIGIT, MARK
from triage.engine.literal_gate import exact_strings
from triage.engine.normalize import DIGITS_TO_ZERO
from triage.engine.prefilter import Prefilter, digit_reads_of

RUNS = re.compile(rb"[0-9]+")
LIMIT = 1 << 14
"""Shapes, and groups, remembered before starting over: memory stays flat on distinct lines."""
Span = tuple[int, int]
Found = TypeVar("Found")


class DigitGroups(Generic[Found]):
    """The group of a line (see the module), and what was found for each group so far."""

    def __init__(self, kb: CompiledKB, prefilter: Prefilter) -> None:
        self._prefilter = prefilter
        self._probe_sources, codes, widened_codes = digit_reads_of(kb)
        self._probes: dict[int, list[re.Pattern[str]] | None] = {}
        self._codes = _alternation(codes)
        self._code_sources = codes
        self._maybe_codes = _alternation(widened_codes)
        self._reads: dict[bytes, tuple[list[Span], list[Span]]] = {}
        """Of a shape: its digit runs that a named digit can fall on, and those only a code can be."""
        self._found: dict[Hashable, Found] = {}

    def key(self, raw: bytes) -> Hashable:
        """The line's group: its shape, the digits that can be read, and which runs hold a code."""
        masked = raw.translate(DIGITS_TO_ZERO)
        reads = self._reads.get(masked)
        if reads is None:
            if len(self._reads) >= LIMIT:
                self._reads.clear()
            reads = self._reads[masked] = self._sort_runs(masked)
        named, coded = reads
        codes = self._codes
        return (
            masked,
            *[raw[start:end] for start, end in named],
            *[raw[start:end] if codes and codes.search(raw, start, end) else b"" for start, end in coded],
        )

    def runs(self, raw: bytes) -> tuple[int, int] | None:
        """The line's group as the native table keys it: which of its digit runs are named and which
        coded (bit n: its n-th run), or None where the table cannot (a run past the 64th, codes
        the table cannot read)."""
        masked = raw.translate(DIGITS_TO_ZERO)
        named, coded = self._reads.get(masked) or self._sort_runs(masked)
        spans = [match.span() for match in RUNS.finditer(masked)]
        at = {span: n for n, span in enumerate(spans)}
        if len(spans) > 64 or (coded and self.code_strings is None):
            return None
        return sum(1 << at[span] for span in named), sum(1 << at[span] for span in coded)

    @cached_property
    def code_strings(self) -> tuple[tuple[bytes, bool, bool], ...] | None:
        """The bare codes as the native table searches a run for them: (digits, a word boundary
        before, after), one per string a code's regex spells; None if one spells no few strings."""
        return _fixed_codes(self._code_sources)

    def get(self, key: Hashable) -> Found | None:
        return self._found.get(key)

    def put(self, key: Hashable, found: Found) -> None:
        if len(self._found) >= LIMIT:
            self._found.clear()
        self._found[key] = found

    def _sort_runs(self, masked: bytes) -> tuple[list[Span], list[Span]]:
        runs = [match.span() for match in RUNS.finditer(masked)]
        flagged = {ident for _, _, ids in self._prefilter.digit_candidates(masked)[0] for ident in (ids or {-1})}
        probes = [self._probes_of(ident) for ident in flagged]
        if any(found is None for found in probes):
            return runs, []  # a pattern whose reads no probe tells: every digit counts
        text = masked.decode("latin-1")
        named = [
            (start, end)
            for start, end in runs
            if any(
                probe.search(text[:start] + MARK * (end - start) + text[end:])
                for some in probes
                for probe in some or ()
            )
        ]
        maybe = self._maybe_codes
        coded = [span for span in runs if span not in named and maybe and maybe.search(masked, *span)]
        return named, coded

    def _probes_of(self, ident: int) -> list[re.Pattern[str]] | None:
        """The compiled probes of a widened pattern by its id; None where one of them cannot tell."""
        if ident not in self._probes:
            sources = self._probe_sources[ident] if 0 <= ident < len(self._probe_sources) else [ANY_DIGIT]
            self._probes[ident] = (
                None if ANY_DIGIT in sources else [re.compile(source, re.IGNORECASE) for source in sources]
            )
        return self._probes[ident]


def _alternation(patterns: list[str]) -> re.Pattern[bytes] | None:
    return re.compile("|".join(f"(?:{p})" for p in patterns).encode(), re.IGNORECASE) if patterns else None


def _fixed_codes(codes: list[str]) -> tuple[tuple[bytes, bool, bool], ...] | None:
    """Each code's strings, with whether a word boundary comes before and after them (`\\b507015\\b`,
    `\\b1070(?:25|33)\\b`): None if a code is any other kind of pattern."""
    found: list[tuple[bytes, bool, bool]] = []
    for code in codes:
        items = list(sre_parse.parse(code))
        before = bool(items) and items[0] == (sre.AT, sre.AT_BOUNDARY)
        after = len(items) > int(before) and items[-1] == (sre.AT, sre.AT_BOUNDARY)
        strings = exact_strings(items[int(before) : len(items) - int(after)])
        if not strings or not all(string.isdigit() for string in strings):
            return None
        found += [(string.encode(), before, after) for string in strings]
    return tuple(found)
