"""Many prefilter expressions as one search of a block's bytes, for the patterns hyperscan refuses
(and for every pattern where hyperscan is not installed)."""

from __future__ import annotations

import re

from triage.kb.byte_patterns import compile_error

_GLOBAL_FLAGS = re.compile(rb"^\(\?([aimsx]+)\)")
_EVERY_LINE = b"(?:^[^\n])"
"""The start of each line with something on it (not the empty rest of a block after its last newline)."""


def byte_alternation(expressions: list[bytes]) -> re.Pattern[bytes]:
    """The expressions as one search (the block holds many lines: `^`/`$` are line boundaries), each
    a group with its leading flags (`(?a)`) scoped to it. Only when that does not compile is each
    group compiled alone (a thousand of them would double the pure-Python prefilter's start-up): one
    that no bytes search can say (the KB validates a pattern, not every rewrite of it) flags every
    line, which its regex then confirms as written."""
    groups = [_group(expression) for expression in expressions]
    flags = re.IGNORECASE | re.MULTILINE
    try:
        return re.compile(b"|".join(groups), flags)
    except re.error:
        return re.compile(b"|".join(_EVERY_LINE if compile_error(group) else group for group in groups), flags)


def _group(expression: bytes) -> bytes:
    found = _GLOBAL_FLAGS.match(expression)
    return b"(?%s:%s)" % (found.group(1), expression[found.end() :]) if found else b"(?:%s)" % expression
