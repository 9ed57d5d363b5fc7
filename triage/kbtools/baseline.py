"""The bar the KB has to clear: a classifier of seven keyword regexes, one per named category.

A figure means something only beside what a trivial rule gets on the same logs, so `triage eval`
reports this one too. A log's category is the one whose keywords match the most lines (ties go to
the earlier category below); a log that no keyword matches gets none; a healthy log that any keyword
matches is a false alarm, since the rule has no confidence to hold back with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from triage.sources import read_chunks

KEYWORDS: tuple[tuple[str, str], ...] = (
    ("npu_oom", r"out of memory|\bOOM\b|allocate"),
    ("segfault", r"segmentation fault|core dumped|\bSIG(?:SEGV|ABRT|BUS)\b|abort|aicore|exception"),
    ("hccl_timeout", r"\bHCCL\b|\btimed? ?out\b|distributed"),
    ("nan_loss_scale", r"\bnan\b|\binf\b|overflow|precision|accuracy"),
    ("unsupported_op", r"not supported|unsupported|not implemented|\baclnn|operator"),
    ("env_version", r"version|No module named|ImportError|cannot open shared object|undefined symbol|install"),
    ("dynamic_shape_compile", r"compil|\bgraph\b|dynamo|triton"),
)
_COMPILED = tuple((category, re.compile(pattern, re.IGNORECASE)) for category, pattern in KEYWORDS)


def classify(lines: Iterable[str]) -> str | None:
    """The category whose keywords match the most lines, or None."""
    counts = dict.fromkeys((category for category, _ in KEYWORDS), 0)
    for line in lines:
        for category, pattern in _COMPILED:
            if pattern.search(line):
                counts[category] += 1
    best = max(counts, key=lambda category: counts[category])
    return best if counts[best] else None


def classify_files(paths: list[Path]) -> str | None:
    """The keyword category of these logs read as one, as the scan reads them (gunzipped, line by
    line, undecodable bytes replaced). Raises SourceError for a log that cannot be read."""
    return classify(line for path in paths for line in _lines(path))


def _lines(path: Path) -> Iterator[str]:
    rest = b""
    for chunk in read_chunks(str(path)):
        *whole, rest = (rest + chunk).split(b"\n")
        yield from (line.decode("utf-8", "replace") for line in whole)
    if rest:
        yield rest.decode("utf-8", "replace")
