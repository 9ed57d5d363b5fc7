"""Reject regexes that can backtrack catastrophically, by looking at their parse tree.

Python's `re` backtracks: a quantified group that can match the same text in more than one way
(`(a+)+`, `(.*)*`, `(\\w+\\s?)+`, `(a|a)*`) takes exponential time on a line that almost matches, and
one such signature can stall a scan of a multi-gigabyte log. The check is structural (no
dependency, no timing): a repeated group is unsafe when it holds another repeat that no required
delimiter separates, alternatives that can start the same way, or an optional tail that can also
start the next repetition (`(a|aa)+`, which the parser factors into `(a(?:|a))+`); and a sequence
is unsafe when MAX_ADJACENT_REPEATS or more unbounded repeats follow each other with nothing they
could not all consume between them (`a*a*a*a*!` is polynomial of that degree).
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from typing import Any

from re import _compiler as sre_compile  # type: ignore[attr-defined]
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT)
"""Backtracking repeats; possessive repeats and atomic groups never backtrack into themselves."""
_CHAR_OPS = (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN)
_ALPHABET = tuple(chr(code) for code in range(32, 127)) + ("\t", "é", "中")
"""Sample characters: two one-character nodes overlap when some sample matches both."""

Items = list[tuple[Any, Any]]
MAX_ADJACENT_REPEATS = 3
"""`.*x.*y` is common and cheap on log lines; each further overlapping repeat multiplies the work by the line length."""


def unsafe_reason(pattern: str) -> str | None:
    """Why `pattern` may backtrack catastrophically, or None when it looks linear."""
    parsed = sre_parse.parse(pattern, re.IGNORECASE)
    return _check(list(parsed), parsed.state)


def _check(items: Items, state: Any) -> str | None:
    reason = _adjacent_repeats_reason(items, state)
    if reason:
        return reason
    for op, av in items:
        if op in (C.GROUPREF, C.GROUPREF_EXISTS):
            # Hyperscan can only approximate a backreference: nearly every line becomes a candidate.
            return "a backreference: the prefilter cannot match it, so it would make every line a candidate"
        if op in _REPEATS and av[1] > 1:
            reason = _repeated_body_reason(_unwrap(list(av[2])), state)
            if reason:
                return reason
        for child in _children(op, av):
            reason = _check(child, state)
            if reason:
                return reason
    return None


def _repeated_body_reason(body: Items, state: Any) -> str | None:
    # Each inner repeat needs a required element that it cannot consume, so that every pass of the
    # outer repeat splits the text in exactly one way: `(\d+\.)+` is linear, `(\w+\s?)+` is not.
    required = [_consumable([(op, av)], state) for op, av in body if op in _CHAR_OPS or (op in _REPEATS and av[0] > 0)]
    for inner in _inner_repeats(body, state):
        if not any(chars.isdisjoint(inner) for chars in required):
            return "nested quantifier: a repeated group contains another repeat with no delimiter between them"
    if _has_overlapping_branch(body, state):
        return "a repeated group has alternatives that can match the same text"
    if _optional_tail_overlaps(body, state):
        return "a repeated group ends with an optional part that can also start the next repetition"
    return None


def _optional_tail_overlaps(body: Items, state: Any) -> bool:
    # Walk back over the optional elements at the end: text they match could instead begin the next
    # pass, so every such character doubles the ways to split a line.
    starts = _first(body, state)
    for op, av in reversed(body):
        if not _nullable([(op, av)]):
            return False
        if not _first([(op, av)], state).isdisjoint(starts):
            return True
    return False


def _adjacent_repeats_reason(items: Items, state: Any) -> str | None:
    chain, reach = 0, set[str]()
    for op, av in items:
        if op in _REPEATS and av[1] == C.MAXREPEAT:
            chars = _consumable(list(av[2]), state)
            chain, reach = (chain + 1, reach & chars) if chain and not reach.isdisjoint(chars) else (1, chars)
            if chain >= MAX_ADJACENT_REPEATS:
                return f"{chain} adjacent repeats can split the same text in many ways (polynomial backtracking)"
        elif op in _CHAR_OPS:
            if _chars(op, av, state).isdisjoint(reach):
                chain = 0  # a required character none of the repeats can consume separates them
        elif op is not C.AT:
            chain = 0
    return None


def _inner_repeats(items: Items, state: Any) -> list[set[str]]:
    """The characters each repeat nested in `items` can consume."""
    found: list[set[str]] = []
    for op, av in items:
        if op in _REPEATS and av[1] > 1:
            found.append(_consumable(list(av[2]), state))
        for child in _children(op, av):
            found += _inner_repeats(child, state)
    return found


def _has_overlapping_branch(items: Items, state: Any) -> bool:
    for op, av in items:
        if op is C.BRANCH:
            alternatives = [(_first(list(alt), state), _nullable(list(alt))) for alt in av[1]]
            for index, (first, nullable) in enumerate(alternatives):
                for other_first, other_nullable in alternatives[index + 1 :]:
                    if (nullable and other_nullable) or not first.isdisjoint(other_first):
                        return True
        if any(_has_overlapping_branch(child, state) for child in _children(op, av)):
            return True
    return False


def _first(items: Items, state: Any) -> frozenset[str]:
    """Characters that can start a match of `items`."""
    out: set[str] = set()
    for op, av in items:
        if op in _CHAR_OPS:
            return frozenset(out | _chars(op, av, state))
        if op in _REPEATS:
            out |= _first(list(av[2]), state)
            if av[0] > 0:
                break
        elif op is C.SUBPATTERN:
            out |= _first(list(av[-1]), state)
            if not _nullable(list(av[-1])):
                break
        elif op is C.BRANCH:
            out |= set().union(*(_first(list(alt), state) for alt in av[1]))
            break
    return frozenset(out)


def _nullable(items: Items) -> bool:
    for op, av in items:
        if op in _CHAR_OPS or op in (C.GROUPREF, C.GROUPREF_EXISTS):
            return False
        if op in _REPEATS and av[0] > 0 and not _nullable(list(av[2])):
            return False
        if op is C.SUBPATTERN and not _nullable(list(av[-1])):
            return False
        if op is C.BRANCH and not any(_nullable(list(alt)) for alt in av[1]):
            return False
    return True


def _consumable(items: Items, state: Any) -> set[str]:
    out: set[str] = set()
    for op, av in items:
        if op in _CHAR_OPS:
            out |= _chars(op, av, state)
        for child in _children(op, av):
            out |= _consumable(child, state)
    return out


def _children(op: Any, av: Any) -> list[Items]:
    """The sub-patterns directly inside one node (a repeat's body included)."""
    if op in _REPEATS:
        return [list(av[2])]
    if op is C.SUBPATTERN:
        return [list(av[-1])]
    if op is C.BRANCH:
        return [list(alt) for alt in av[1]]
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [list(av[1])]
    if op is C.ATOMIC_GROUP or op is C.POSSESSIVE_REPEAT:
        return [list(av if op is C.ATOMIC_GROUP else av[2])]
    if op is C.GROUPREF_EXISTS:
        return [list(branch) for branch in av[1:] if branch is not None]
    return []


def _unwrap(items: Items) -> Items:
    while len(items) == 1 and items[0][0] is C.SUBPATTERN:
        items = list(items[0][1][-1])
    return items


def _chars(op: Any, av: Any, state: Any) -> frozenset[str]:
    # Keyed by the pattern's flags, not its parse state: a one-character node means the same in
    # every pattern with those flags, and the KB's thousand regexes share most of their nodes.
    return _chars_cached(op, _freeze(av), state.flags)


@lru_cache(maxsize=4096)
def _chars_cached(op: Any, av: Any, flags: int) -> frozenset[str]:
    # Compile the single node on its own and try it on every sample character: exact for
    # literals, classes, categories and case folding without re-implementing them.
    state = sre_parse.State()
    state.flags = flags
    node = sre_parse.SubPattern(state, [(op, _thaw(av))])
    compiled = sre_compile.compile(node, re.IGNORECASE)
    return frozenset(ch for ch in _ALPHABET if compiled.fullmatch(ch))


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def _thaw(value: Any) -> Any:
    return [_thaw(v) for v in value] if isinstance(value, tuple) else value


LONG_RUNS = {
    "letters": "y" * 16_000,
    "digits": "1" * 16_000,
    "spaces": " " * 16_000 + "x",
    "dotted names": "a." * 8_000,
    "words": "yy " * 5_000,
    # what the launcher prefixes a pattern is read after (see `triage.engine.anchors`) are made of:
    # a run of them that splits in 2^n ways takes seconds on this few, and never ends on more
    "dashes": "-" * 24 + "x",
    "ranks": "1:" * 8_000 + "x",
}
"""Lines that a regex able to start anywhere in a run (`\\d+\\s*GB`, `^\\s*E?\\s+x`) reads once from each
of their characters: quadratic, not catastrophic, so the structural check above lets it pass."""
SLOW_SECONDS = 0.2
"""Twenty times what the slowest shipped regex takes on them (a line of spaces took one 5.5 s)."""


def slow_on_long_runs(pattern: str) -> tuple[str, float] | None:
    """The long run (see LONG_RUNS) that `pattern` takes more than SLOW_SECONDS to search, and how
    long: the one check here that is timed, so `kb validate` reports it as a warning only."""
    compiled = re.compile(pattern, re.IGNORECASE)
    for name, line in LONG_RUNS.items():
        started = time.perf_counter()
        compiled.search(line)
        took = time.perf_counter() - started
        if took > SLOW_SECONDS:
            return name, took
    return None
