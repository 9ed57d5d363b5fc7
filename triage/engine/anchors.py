"""Signatures written for a line's start, read after the launcher's prefix too.

A signature anchored with `^` (`^\\s*Killed\\s*$`, `^#\\d+ ... in abort (`, `^\\s*CMake Error`) is written
for the line as the program printed it; the same line from a rank of a torchrun job reads
`[rank3]: Killed`, from a container `2024-05-01T10:11:12Z stderr F Killed`, from journald
`May  1 10:11:12 node1 python[12]: Killed`, and no anchored signature matched it. Each anchor at
the start of one of the pattern's alternatives (a signature's, its exclusions', a cause's evidence)
is widened to the start after any run of the prefixes that say where a line came from
(`error_lines.LAUNCHER_PREFIX`; a logger's level is part of what the line says, and is not read
past), and the prefilters, which only say a pattern may match, search the pattern without anchors.
"""

from __future__ import annotations

import re

from triage.engine.error_lines import LAUNCHER_PREFIX

_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")

MAX_PREFIXES = 12
"""More prefixes than any launcher and logger stack together write (a timestamp, a rank, a worker, a
level, a file): the pattern is tried after each count of them, each try reading the rest of the line."""
AFTER_PREFIX = rf"^(?:\s*(?>{LAUNCHER_PREFIX})){{0,{MAX_PREFIXES}}}[ \t]?"
"""Each prefix atomic: a run of dashes (`-+`) splits into prefixes in 2^n ways, and trying each took
seconds for 24 dashes; the pattern may still start at an earlier prefix (`^FATAL ...` after `FATAL`,
an error's level, is read past). Then the space a prefix ends with (`[rank3]: note: ...`), one, which
a pattern's own `^\\s+` may still take."""


def after_prefix(source: str) -> str:
    """The pattern with each leading anchor widened to the start after the line's prefixes."""
    return _rewrite(source, AFTER_PREFIX)


def unanchored(source: str) -> str:
    """The pattern without its leading anchors: what a prefilter searches for it."""
    return _rewrite(source, "")


def _rewrite(source: str, anchor: str) -> str:
    at = _leading_anchors(source)
    if not at:
        return source
    parts, last = [], 0
    for position in at:
        parts += [source[last:position], anchor]
        last = position + 1
    return "".join(parts) + source[last:]


def _leading_anchors(source: str) -> list[int]:
    """Where a `^` opens the pattern or one of its top-level alternatives (not inside a group or a
    character class, where it means something else or is already widened by the author), after the
    pattern's global flags (`(?i)^...`)."""
    found = []
    depth, in_class, escaped, opening, class_start = 0, False, False, True, -1
    flags = _GLOBAL_FLAGS.match(source)
    for position, char in enumerate(source):
        if flags and position < flags.end():
            continue
        if escaped:
            escaped, opening = False, False
            continue
        if char == "\\":
            escaped = True
        elif in_class:
            # a `]` first in a class (`[]a]`, `[^]a]`) is one of its characters
            first = position == class_start or (position == class_start + 1 and source[class_start] == "^")
            in_class = char != "]" or first
        elif char == "[":
            in_class, class_start = True, position + 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            opening = True
            continue
        elif char == "^" and depth == 0 and opening:
            found.append(position)
        opening = False
    return found
