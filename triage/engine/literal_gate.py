"""The words a regular expression cannot match without: a test, far cheaper than the search, that a
line holds no match.

Python's `re` tries every alternative of a pattern such as `\\bnan\\b|overflow|out of memory|...` at
every position of a line: on a line that holds none of the words, 10-30 us a pattern, and the
error-line kinds judge every new line shape with a dozen such patterns (a serving log whose request
ids make each line a new shape spent 85 us a line there). A pattern's parse tree tells a set of
strings of which every match holds at least one: the words of each alternative, a run of literal
characters between the parts that vary, with groups of a few fixed strings (`(?:error|fatal)`,
`(?:\\d{4})?`) spelled out. A line holding none of them is not searched (`GatedPattern`).

The strings are read lowered and with every digit as '0', and tested on the line lowered and
digit-masked (`gate_text`): `\\d{2}:\\d{2}` requires '00:00', `(?i:Error)` 'error'. That is exact
for ASCII lines only (case-insensitive matching folds a few non-ASCII letters onto ASCII ones), so a
line with other characters is always searched. Where the tree tells nothing useful (an alternative
with no literal run of MIN_LENGTH characters), the pattern is always searched.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from collections.abc import Iterable, Iterator
from typing import Any

from triage.engine.normalize import mask_digits

MIN_LENGTH = 2
"""Strings shorter than this say too little to be worth testing."""
MAX_EXPANSION = 8
"""A small class (`[EF]`) continues a run as one run per character, up to this many runs."""
ZERO_WIDTH = {sre.AT, sre.ASSERT, sre.ASSERT_NOT}
"""Parts that match no character: the text a match spans stays contiguous across them."""
REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}
Literals = tuple[str, ...]
STARTS = {sre.AT_BEGINNING, sre.AT_BEGINNING_STRING}


def required_literals(source: str, flags: int = 0) -> Literals | None:
    """Strings (lowered, digits as '0') of which every match of the pattern holds one; None when
    the pattern's tree tells none worth testing, or when `re` finds its matches fast by itself: a
    pattern anchored at the start, or starting with a literal character, which it looks for in C
    (not when the pattern ignores case: then it tries every position)."""
    try:
        tree = list(sre_parse.parse(source, flags))
    except (re.error, RecursionError, TypeError):  # a private module: whatever it cannot read is searched
        return None
    literal_start = tree and tree[0][0] is sre.LITERAL and not flags & re.IGNORECASE
    if not tree or literal_start or (tree[0][0] is sre.AT and tree[0][1] in STARTS):
        return None
    found = _best(_candidates(tree))
    if found is None:
        return None
    # A string that holds another of the set adds nothing to the test: "error" stands for "error:".
    kept = [s for s in found if not any(other != s and other in s for other in found)]
    return tuple(sorted(kept))


def gate_text(text: str) -> str | None:
    """The form of a line the literals are tested on, or None where a test is not exact (see module)."""
    return gate_lowered(text.lower())


def gate_lowered(lowered: str) -> str | None:
    """`gate_text` of a line already lowered."""
    # Lowering never turns a letter that case-insensitive matching folds onto ASCII into another:
    # a lowered line that is ASCII is tested exactly.
    return mask_digits(lowered) if lowered.isascii() else None


def may_match(literals: Literals | None, gated: str | None) -> bool:
    """False only where the line (as `gate_text` gave it) holds none of the pattern's literals."""
    return literals is None or gated is None or any(map(gated.__contains__, literals))


GateRow = tuple[str, int, Literals | None]
"""A gated pattern's source, flags and literals, as the compiled-KB cache keeps them."""
_GATED: list[GatedPattern] = []
"""Every gated pattern made: their literals are worked out once, when the KB is built, and cached with it."""
_CACHED: dict[tuple[str, int], Literals | None] = {}
"""Literals read back from the cache, by pattern source and flags."""


class GatedPattern:
    """A pattern searched only on lines that hold one of its literals (read from the KB cache, or
    worked out at the first search, so that importing a module of patterns costs no parsing:
    reading the trees of the error-line and job-context patterns took 15 ms of every worker's first
    error line). It is compiled the first time a line passes its gate: of the fifty such patterns
    (the job context's frameworks, launchers and versions, the error-line kinds) a log needs about
    eight, and compiling the others cost 6 ms of every scan's start."""

    __slots__ = ("source", "flags", "_compiled", "_literals", "_read")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source = source
        self.flags = int(flags)  # not the RegexFlag: the KB cache marshals it
        self._compiled: re.Pattern[str] | None = None
        self._literals: Literals | None = None
        self._read = False
        _GATED.append(self)

    @classmethod
    def of(cls, pattern: re.Pattern[str]) -> GatedPattern:
        """The gate of a pattern compiled already (one that is also searched ungated elsewhere)."""
        gated = cls(pattern.pattern, pattern.flags)
        gated._compiled = pattern
        return gated

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def search(self, text: str, gated: str | None) -> re.Match[str] | None:
        """`pattern.search(text)`, where `gated` is `gate_text` of the text searched (or of the
        text it was cut from)."""
        if not self._read:
            self._read_literals()
        return self.pattern.search(text) if may_match(self._literals, gated) else None

    def finditer(self, text: str, gated: str | None) -> Iterator[re.Match[str]]:
        """`pattern.finditer(text)`, gated as `search` is."""
        if not self._read:
            self._read_literals()
        return self.pattern.finditer(text) if may_match(self._literals, gated) else iter(())

    def _read_literals(self) -> None:
        key = (self.source, self.flags)
        self._literals = _CACHED[key] if key in _CACHED else required_literals(self.source, self.flags)
        self._read = True


def gate_rows() -> list[GateRow]:
    """The literals of every gated pattern made so far, for the compiled-KB cache."""
    rows = []
    for gated in _GATED:
        if not gated._read:
            gated._read_literals()
        rows.append((gated.source, gated.flags, gated._literals))
    return rows


def use_gate_rows(rows: Iterable[GateRow]) -> None:
    """Take the literals the compiled-KB cache kept (see `gate_rows`)."""
    _CACHED.update(((source, flags), None if literals is None else tuple(literals)) for source, flags, literals in rows)


def _candidates(items: list[tuple[Any, Any]]) -> list[frozenset[str]]:
    """Sets of strings, each of which a match of this sequence of parts must hold one of."""
    found: list[frozenset[str]] = []
    runs = [""]

    def close() -> None:
        nonlocal runs
        if any(runs):
            found.append(frozenset(runs))
        runs = [""]

    for op, value in items:
        spelled = _fixed(op, value)
        if spelled is not None and len(runs) * len(spelled) <= MAX_EXPANSION:
            runs = [run + text for run in runs for text in spelled]
            continue
        if op in REPEATS:
            low, high, part = value
            single = _fixed_sequence(list(part))
            if single is not None and low >= 1:
                added = 0  # the copies a match must hold, while the runs stay few
                while added < min(low, MAX_EXPANSION) and len(runs) * len(single) <= MAX_EXPANSION:
                    runs = [run + text for run in runs for text in single]
                    added += 1
                if added < low or high != low:
                    close()  # characters the runs do not spell follow
                continue
        close()
        if op in REPEATS and value[0] >= 1:
            found += _as_list(_best(_candidates(list(value[2]))))
        elif op is sre.SUBPATTERN:
            found += _as_list(_best(_candidates(list(value[-1]))))
        elif op is sre.BRANCH:
            found += _as_list(_union(_best(_candidates(list(branch))) for branch in value[1]))
        # else: any other character, a back reference, a conditional: the run ends here
    close()
    return found


def exact_strings(items: list[tuple[Any, Any]]) -> list[str] | None:
    """The few strings a sequence of parsed parts matches as written (not lowered, digits kept), or
    None: the bare codes the native table searches digit runs for (see `digit_groups`)."""
    return _fixed_sequence(items, exact=True)


def _fixed(op: Any, value: Any, exact: bool = False) -> list[str] | None:
    """The few strings (lowered, digits as '0', unless `exact`) one part matches: a character of a
    small class, a group of literal alternatives (`(?:error|fatal)`), an optional or counted one
    (`(?:\\d{4})?`); None for any other part."""
    if op in ZERO_WIDTH:
        return [""]
    if op is sre.LITERAL or op is sre.IN:
        return _chars(op, value, exact)
    if op is sre.SUBPATTERN:
        return _fixed_sequence(list(value[-1]), exact)
    if op is sre.BRANCH:
        spelled: list[str] = []
        for branch in value[1]:
            alternative = _fixed_sequence(list(branch), exact)
            if alternative is None:
                return None
            spelled += alternative
        return _few(spelled)
    if op in REPEATS and value[1] <= MAX_EXPANSION:
        low, high, part = value
        once = _fixed_sequence(list(part), exact)
        if once is None:
            return None
        spelled, copies = [], [""]
        for count in range(high + 1):
            if count >= low:
                spelled += copies
            copies = [copy + text for copy in copies for text in once]
            if len(copies) > MAX_EXPANSION:
                return None
        return _few(spelled)
    return None


def _fixed_sequence(items: list[tuple[Any, Any]], exact: bool = False) -> list[str] | None:
    """The few strings a sequence of parts matches (see `_fixed`), or None."""
    spelled: list[str] | None = [""]
    for op, value in items:
        part = _fixed(op, value, exact)
        if part is None or spelled is None:
            return None
        spelled = _few([text + more for text in spelled for more in part])
    return spelled


def _few(spelled: list[str]) -> list[str] | None:
    """The distinct strings, if they are few enough to test."""
    unique = list(dict.fromkeys(spelled))
    return unique if len(unique) <= MAX_EXPANSION else None


def _chars(op: Any, value: Any, exact: bool) -> list[str] | None:
    """The characters (lowered, digits as '0', unless `exact`) one part matches, where it is one of a few."""
    if op is sre.LITERAL:
        return [chr(value) if exact else mask_digits(chr(value).lower())]
    if op is not sre.IN:
        return None
    chars: set[str] = set()
    for kind, item in value:
        if kind is sre.LITERAL:
            chars.add(chr(item) if exact else mask_digits(chr(item).lower()))
        elif not exact and kind is sre.CATEGORY and item is sre.CATEGORY_DIGIT:
            chars.add("0")
        elif not exact and kind is sre.RANGE and ord("0") <= item[0] <= item[1] <= ord("9"):
            chars.add("0")
        else:
            return None  # a negated class, a wider category or range
    return sorted(chars)


def _best(candidates: list[frozenset[str]]) -> frozenset[str] | None:
    """The candidate likeliest to rule a line out: whose strings all hold most letters (digits and
    punctuation, as in a timestamp's '00:00:00', are on most lines), then the longest, the fewest."""
    useful = [found for found in candidates if min(map(len, found)) >= MIN_LENGTH]
    return max(useful, key=lambda found: (min(map(_letters, found)), min(map(len, found)), -len(found)), default=None)


def _letters(text: str) -> int:
    return sum(char.isalpha() for char in text)


def _union(sets: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """Of the alternatives of a branch: one of their strings, or None if one alternative has none."""
    union: frozenset[str] = frozenset()
    for found in sets:
        if found is None:
            return None
        union |= found
    return union


def _as_list(found: frozenset[str] | None) -> list[frozenset[str]]:
    return [] if found is None else [found]
