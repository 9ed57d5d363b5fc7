"""Which lines of one shape (digits masked) can differ in what they match.

The native shape table (see `triage.engine.native_lines`) treats lines that differ only in their
digits as one line. That holds for a pattern that cannot tell one digit from another (`\\d+`,
`step \\w+`), not for one that names digits (`\\b507035\\b`, `EI0006`, `[1-9]`). For each such
pattern a *widened* one is built, every digit it names turned into any digit: it matches a line
whenever the pattern matches some line of that shape, and (telling no digit apart) it matches all
lines of a shape or none. Lines whose masked bytes no widened pattern matches are safe to remember
by shape; the others are matched one by one, as if every line were new.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from triage.engine.compiled import CASE_SENSITIVE_TRIGGERS, TRIGGER_PATTERNS, CompiledKB
from triage.engine.context import CONTEXT_TRIGGERS
from triage.engine.error_lines import PATTERNS as ERROR_PATTERNS

DIGITS = frozenset(range(ord("0"), ord("9") + 1))
ANY_DIGIT = r"\d"
"""What stands for a pattern that cannot be widened: every line with a digit is matched alone."""
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
}
_AT = {
    sre.AT_BEGINNING: "^",
    sre.AT_BEGINNING_STRING: r"\A",
    sre.AT_END: "$",
    sre.AT_END_STRING: r"\Z",
    sre.AT_BOUNDARY: r"\b",
    sre.AT_NON_BOUNDARY: r"\B",
}
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
Items = Any
"""A parsed pattern's items (`re._parser.SubPattern` or a list of (op, argument) pairs)."""


def regex_source_runs(kb: CompiledKB) -> tuple[tuple[str, ...], ...]:
    """Every regex whose verdict on a line a line's shape stands for, once: the prefilter's trigger
    and context words, the error-line rules and the first KB directory's signatures (with their
    exclusions), then each further directory's signatures, a run for each directory."""
    fixed: list[str | None] = [*TRIGGER_PATTERNS, *CASE_SENSITIVE_TRIGGERS, *CONTEXT_TRIGGERS, *ERROR_PATTERNS]
    runs = [
        [source for signature in run for source in (signature.candidate_source, *signature.exclude_sources)]
        for run in kb.directory_runs(kb.signatures, lambda signature: signature.index)
    ]
    runs[0] = fixed + runs[0]
    seen: set[str] = set()
    out = []
    for run in runs:
        fresh = tuple(dict.fromkeys(source for source in run if source is not None and source not in seen))
        seen.update(fresh)
        out.append(fresh)
    return tuple(out)


DigitReads = tuple[list[str], list[str], dict[str, list[str]], list[str]]
"""What `digit_analysis` finds: widened named patterns, widened bare codes, the probes of each
widened named pattern, and the bare codes as written."""


def digit_analysis(patterns: list[str]) -> DigitReads:
    """Everything the digit reads need of the patterns, in one parse of each (a tenth of a second
    for the shipped KB): see `digit_patterns` and `digit_reads`."""
    probes: dict[str, list[str]] = {}
    widened_codes: dict[str, None] = {}
    codes: dict[str, None] = {}
    for alternative, flags, code in _telling(patterns):
        if code:
            widened_codes.setdefault(widen(alternative, flags), None)
            codes.setdefault(keep(alternative, flags), None)
        else:
            probes.setdefault(widen(alternative, flags), []).append(probe(alternative, flags))
    return list(probes), list(widened_codes), probes, list(codes)


def digit_patterns(patterns: list[str]) -> tuple[list[str], list[str]]:
    """The widened forms of the patterns (and top-level alternatives) that tell digits apart:
    those that may match more than digits, and bare codes (`507035`), which count only on a line
    with an error context (see `triage.engine.confirm`). Duplicates once."""
    named, widened_codes, _, _ = digit_analysis(patterns)
    return named, widened_codes


def digit_reads(patterns: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """What tells where a line's digits are read (see `triage.engine.digit_groups`): the probes of
    the alternatives each widened pattern of `digit_patterns` stands for, and the bare codes as
    written."""
    _, _, probes, codes = digit_analysis(patterns)
    return probes, codes


def _telling(patterns: list[str]) -> list[tuple[Items, int, bool]]:
    """The top-level alternatives that tell digits apart, with their pattern's flags and whether
    each is a bare code."""
    found = []
    for pattern in patterns:
        parsed = sre_parse.parse(pattern, re.IGNORECASE)
        flags = parsed.state.flags
        for alternative in _alternatives(list(parsed)):
            if _tells_digits(alternative):
                found.append((alternative, flags, _bare_code(alternative)))
    return found


def _alternatives(items: list[tuple[Any, Any]]) -> list[list[tuple[Any, Any]]]:
    """A pattern as its top-level alternatives: `\\b(?:A|507015)\\b` is `\\bA\\b` or `\\b507015\\b`."""
    inner = [n for n, (op, _) in enumerate(items) if op is not sre.AT]
    if len(inner) != 1:
        return [items]
    op, argument = items[inner[0]]
    before, after = items[: inner[0]], items[inner[0] + 1 :]
    if op is sre.SUBPATTERN and not argument[1] and not argument[2]:
        return [before + alternative + after for alternative in _alternatives(list(argument[3]))]
    if op is sre.SUBPATTERN:  # `(?i:a|b)`: each alternative keeps the group's flags
        group, add, remove, inner = argument
        return [before + [(op, (group, add, remove, alt))] + after for alt in _alternatives(list(inner))]
    if op is sre.BRANCH:
        return [before + alt + after for branch in argument[1] for alt in _alternatives(list(branch))]
    return [items]


def _bare_code(items: Items) -> bool:
    """Whether every match is digits only (and not empty): what `confirm` counts as a bare code."""
    digits = False
    for op, argument in items:
        if op is sre.AT:
            continue
        if op is sre.LITERAL and argument in DIGITS:
            digits = True
        elif op is sre.IN and argument and argument[0][0] is not sre.NEGATE and _only_digits(argument):
            digits = True
        elif op in _REPEATS:
            digits |= _bare_code(argument[2]) and argument[0] > 0
            if not _bare_code(argument[2]):
                return False
        elif op is sre.SUBPATTERN:
            if not _bare_code(argument[3]):
                return False
            digits = True
        elif op is sre.BRANCH:
            if not all(_bare_code(branch) for branch in argument[1]):
                return False
            digits = True
        else:
            return False
    return digits


def _only_digits(members: list[tuple[Any, Any]]) -> bool:
    return all(
        (op is sre.LITERAL and argument in DIGITS)
        or (op is sre.RANGE and argument[0] in DIGITS and argument[1] in DIGITS)
        or (op is sre.CATEGORY and argument is sre.CATEGORY_DIGIT)
        for op, argument in members
    )


def widen(parsed: Items, flags: int = 0) -> str:
    """The pattern with every digit it names made any digit, and its look-arounds dropped (each
    only narrows a match); ANY_DIGIT where a construct has no widened form here."""
    try:
        text = _Writer(WIDEN).items(parsed)
    except ValueError:
        return ANY_DIGIT
    return f"(?s){text}" if flags & re.DOTALL else text


def probe(parsed: Items, flags: int = 0) -> str:
    """The widened pattern, where each digit the pattern names may also be MARK, and which matches
    only where one of them is: on a masked line whose digit run is written as MARKs, it tells
    whether a digit the pattern names can be read in that run. ANY_DIGIT where it cannot tell (a
    look-around that names digits reads outside the match)."""
    writer = _Writer(PROBE)
    try:
        if any(op in (sre.ASSERT, sre.ASSERT_NOT) and _tells_digits(arg[-1]) for op, arg in _walk(parsed)):
            raise ValueError("a look-around names digits")
        text = writer.items(parsed)
    except ValueError:
        return ANY_DIGIT
    # Fails unless a marked digit took part: `(?(1)|(?(2)|(?!)))`.
    check = "(?!)"
    for group in range(writer.groups, 0, -1):
        check = f"(?({group})|{check})"
    return f"(?s){text}{check}" if flags & re.DOTALL else f"{text}{check}"


def keep(parsed: Items, flags: int = 0) -> str:
    """The pattern as written (look-arounds dropped), for a bare code: what `probe` is to the others."""
    text = _Writer(KEEP).items(parsed)
    return f"(?s){text}" if flags & re.DOTALL else text


def _tells_digits(items: Items) -> bool:
    for op, argument in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL) and argument in DIGITS:
            return True
        if op is sre.IN and 0 < len(_digits_in(argument)) < len(DIGITS):
            return True
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS) or any(_tells_digits(inner) for inner in _inner(op, argument)):
            return True
    return False


def _inner(op: Any, argument: Any) -> list[Items]:
    if op in _REPEATS:
        return [argument[2]]
    if op is sre.SUBPATTERN:
        return [argument[3]]
    if op is sre.BRANCH:
        return list(argument[1])
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [argument[-1]]
    if op is sre.ATOMIC_GROUP:  # its argument is the group's items themselves: `(?>ab)`
        return [argument]
    return []


def _digits_in(members: list[tuple[Any, Any]]) -> set[int]:
    """The digits a character class's members name (before any negation)."""
    found: set[int] = set()
    for op, argument in members:
        if op is sre.LITERAL:
            found |= {argument} & DIGITS
        elif op is sre.RANGE:
            found |= set(range(argument[0], argument[1] + 1)) & DIGITS
        elif op is sre.CATEGORY and argument in (sre.CATEGORY_DIGIT, sre.CATEGORY_WORD, sre.CATEGORY_NOT_SPACE):
            found |= DIGITS
    return found


WIDEN, PROBE, KEEP = range(3)
MARK = "\u00aa"
"""A word character that is no digit (ª): `\\b` and `\\w` read it as they read a digit."""


class _Writer:
    """Writes parsed items back as a regex: the digits they name widened to any digit (WIDEN),
    also marked (PROBE, see `probe`), or as they are (KEEP)."""

    def __init__(self, mode: int) -> None:
        self.mode = mode
        self.groups = 0

    def items(self, items: Items) -> str:
        return "".join(self.item(op, argument) for op, argument in items)

    def item(self, op: Any, argument: Any) -> str:
        if op is sre.LITERAL:
            if argument in DIGITS:
                return chr(argument) if self.mode == KEEP else self._named(ANY_DIGIT)
            # hyperscan reads bytes: a character beyond ASCII is its UTF-8 bytes, as one atom.
            return (
                _char(argument)
                if argument < 0x80
                else "(?:" + "".join(f"\\x{b:02x}" for b in chr(argument).encode()) + ")"
            )
        if op is sre.NOT_LITERAL:
            if argument in DIGITS:
                return f"[^{chr(argument)}]" if self.mode == KEEP else self._named(r"[\s\S]")
            return f"[^{_char(argument)}]"
        if op is sre.ANY:
            return "."
        if op is sre.IN:
            return self._class(argument)
        if op is sre.AT and argument in _AT:
            return _AT[argument]
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            return ""
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.items(branch) for branch in argument[1]) + ")"
        if op is sre.SUBPATTERN:
            _, add, remove, inner = argument
            return f"(?{_flags(add)}{'-' + _flags(remove) if remove else ''}:{self.items(inner)})"
        if op in _REPEATS and op is not sre.POSSESSIVE_REPEAT:
            low, high, inner = argument
            bound = f"{{{low},}}" if high is sre.MAXREPEAT else f"{{{low},{high}}}"
            return f"(?:{self.items(inner)}){bound}{'?' if op is sre.MIN_REPEAT else ''}"
        raise ValueError(f"no widened form for {op}")

    def _named(self, widened: str) -> str:
        """An atom that names digits, widened; in a probe, also a marked digit, remembered."""
        if self.mode != PROBE:
            return widened
        self.groups += 1
        return f"(?:({MARK})|{widened})"

    def _class(self, members: list[tuple[Any, Any]]) -> str:
        negated = bool(members) and members[0][0] is sre.NEGATE
        members = members[1:] if negated else members
        named = _digits_in(members)
        if self.mode == KEEP or not named or len(named) == len(DIGITS):
            written = "[" + ("^" if negated else "") + "".join(_member(op, argument) for op, argument in members) + "]"
            if self.mode != PROBE:
                return written
            # A mark stands for a digit: a class that takes every digit takes it, one that takes none does not.
            takes_digits = (not named) if negated else bool(named)
            return f"(?:{MARK}|{written})" if takes_digits else f"(?:(?!{MARK}){written})"
        # Widen: a class that admits some digits admits all; a negated one refuses none.
        members = (
            [m for m in members if not _digits_in([m])] if negated else [*members, (sre.CATEGORY, sre.CATEGORY_DIGIT)]
        )
        if negated and not members:
            return self._named(r"[\s\S]")
        return self._named("[" + ("^" if negated else "") + "".join(_member(op, arg) for op, arg in members) + "]")


def _walk(items: Items) -> list[tuple[Any, Any]]:
    """Every item, nested ones too."""
    found = list(items)
    for op, argument in items:
        for inner in _inner(op, argument):
            found += _walk(inner)
    return found


def _member(op: Any, argument: Any) -> str:
    if op is sre.LITERAL:
        return _char(argument)
    if op is sre.RANGE:
        return f"{_char(argument[0])}-{_char(argument[1])}"
    if op is sre.CATEGORY and argument in _CATEGORIES:
        return _CATEGORIES[argument]
    raise ValueError(f"no widened form for class member {op}")


def _char(code: int) -> str:
    if code > 0x7F:
        raise ValueError("a non-ASCII character: hyperscan reads bytes")
    char = chr(code)
    return char if char.isalnum() or char == " " else f"\\x{code:02x}"


def _flags(flags: int) -> str:
    return "".join(
        letter for letter, flag in (("i", re.IGNORECASE), ("s", re.DOTALL), ("m", re.MULTILINE)) if flags & flag
    )
