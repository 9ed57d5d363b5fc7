"""A query to paste into an issue tracker's search box for an error no rule knows.

A tracker's phrase search ignores punctuation and wants the phrase's words next to each other, as
the thread printed them. A number, an address or a path inside the phrase (`[Errno 30]`, `pid=276`,
`/data0/...`) is this job's, not the thread's: a phrase with its digits masked away (`[errno ]
read-only file system`) matches no thread. So the phrase is a run of the message's own words between
such values, and words keep the digits that name them (`aten.expm1`, `conv2d`, `fullmesh_v1`, `bf16`).
"""

from __future__ import annotations

import re

_VARIABLE = re.compile(
    r"[-+]?\d[\d.,:_-]*(?:[a-zA-Z%]{1,3})?"  # numbers, dates, times, sizes (3.52GiB, 100ms, 85%)
    r"|0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|[0-9a-fA-F-]{36}"  # addresses, hashes, uuids
    r"|\S*/\S*"  # paths, URLs, ratios
    r"|\S*=\S*"  # settings and fields (pid=276, rank=3, device=1)
    r"|\S*:\d+"  # a source line (core.py:1100)
    r"|\S*[-_]\d+"  # a numbered instance (Thread-6, rank-3)
    r"|(?:\S*\.)?\d+\.\S*|\S*\.\d+"  # a dotted name with an index in it (model.layers.92.mlp)
)
"""A token that is this job's value, not the message's wording."""
_EDGES = "'\"`:!?|.-"
"""Punctuation around a word (quotes, a colon after an exception's name): not part of it."""
_SEPARATORS = re.compile(r"[\s()\[\]{}<>,;]+")
"""What parts a message's words: spaces, brackets (`[LaunchKernelFromCache][129253]`, `f(x)`), commas."""
MIN_PHRASE = 3
MAX_PHRASE = 10


def search_query(message: str) -> str:
    """The first run of at least MIN_PHRASE of the message's own words, quoted (else its longest),
    then the words that say where to look."""
    runs: list[list[str]] = [[]]
    for token in _SEPARATORS.split(message[:1000]):
        word = token.strip(_EDGES)
        if not word:
            continue  # punctuation alone: a tracker's search ignores it
        if _VARIABLE.fullmatch(word):
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(word)
    phrase = next((run for run in runs if len(run) >= MIN_PHRASE), max(runs, key=len))
    return f'"{" ".join(phrase[:MAX_PHRASE])}" ascend npu'
