"""Messages that a terminal or logger wrapped onto the next line."""

from __future__ import annotations

import re

from triage.engine.matcher import Hit, LineMatcher
from triage.engine.normalize import decode_line
from triage.engine.prefilter import Prefilter
from triage.engine.shapes import MATCH_WINDOW

_CONTINUATION_PREFIX = re.compile(r"^\s*(?:\[rank\s*\d+\]:\s*)?")
"""What a wrapped line starts with before the rest of the message: indentation, a rank prefix."""
_NEW_MESSAGE = re.compile(
    r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception):\s|Traceback \(most recent call last\)"
    r"|(?:\[[^\]\n]{1,40}\]\s*)*\[?\d{4}[-/]\d{2}[-/]\d{2}[ T-]\d{2}:\d{2}"
)
"""A line that opens with an exception name starts a message of its own: it continues nothing. So
does one that opens with a date and time, after a logger's bracketed tags (`[titan] 2026-01-28
11:15:20,982 - root - INFO - ...`): a record of its own, however its words read after the line
before (torchtitan's "adjusting timeout for all ProcessGroups" under torch's timeout warning read as
a rendezvous timeout)."""
_PYTHON_WARNING = re.compile(r"\.py:\d+: \w*Warning: ")
"""A warning as Python's `warnings` module prints it (`file.py:1536: UserWarning: ...`): the line after it
echoes the source line of the `warnings.warn(...)` call, not the rest of the message."""


def wrapped_hits(
    prefilter: Prefilter, matcher: LineMatcher, raw: bytes, block: bytes, next_start: int, end: int
) -> tuple[str, list[Hit]] | None:
    """The joined text of a line and the next one in block[next_start:end], and the hits that need
    both lines: an exact match must span the join, a fuzzy one must not match the next line alone
    (that line is matched on its own anyway). None when nothing needs both.
    """
    next_end = block.find(b"\n", next_start, end)
    next_raw = block[next_start : end if next_end < 0 else next_end]
    if not next_raw.strip() or len(next_raw) > MATCH_WINDOW:
        return None
    text, next_text = decode_line(raw), decode_line(next_raw)
    head, tail = text.rstrip(), _CONTINUATION_PREFIX.sub("", next_text)
    if _NEW_MESSAGE.match(tail) or _PYTHON_WARNING.search(head):
        return None
    # A terminal's hard wrap cuts a word where the line is full ("out of mem" / "ory"), a logger's
    # between words: a word cut at an unindented line is tried glued first.
    cut = text[-1:].isalnum() and tail[:1].isalnum() and tail[:1] == next_text[:1]
    for joined in ([f"{head}{tail}"] if cut else []) + [f"{head} {tail}"]:
        hits = _hits_across(prefilter, matcher, joined, len(head), tail)
        if hits:
            return joined, hits
    return None


def _hits_across(prefilter: Prefilter, matcher: LineMatcher, joined: str, join: int, tail: str) -> list[Hit]:
    """The hits in the joined text that need both lines (see `wrapped_hits`)."""
    # The prefilters name the few signatures worth trying on the joined text, as for any line.
    encoded = joined.encode("utf-8", "replace")
    found = [ids for _, _, ids in prefilter.candidates(encoded) + prefilter.cause_candidates(encoded)]
    if not found:
        return []
    ids: set[int] | None = set()
    for some in found:
        ids = None if ids is None or some is None else ids | some
    hits = [
        hit
        for hit in matcher.exact(joined, ids)
        if hit.match is not None and hit.match.start() < join < hit.match.end()
    ]
    fuzzy = matcher.fuzzy(joined)
    if fuzzy:  # the next line alone is matched only when needed: most joins match nothing
        alone = {hit.signature.index for hit in matcher.fuzzy(tail)}
        hits += [hit for hit in fuzzy if hit.signature.index not in alone]
    return hits
