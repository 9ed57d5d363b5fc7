"""Hyperscan databases, compiled once for each run of patterns in whatever KB set the run appears.

Compiling the shipped KB's patterns takes seconds. A contributor who adds an entry in a user KB
directory, or edits it, must not pay them again on every `kb test` or `scan --kb`: the compiled
KB lays out each directory's signatures together (see `compile_kb`), each prefilter database is
compiled in runs, one per directory, and each run's database is cached on disk under a hash of its
exact expressions, ids and flags. The shipped run compiled for one KB set then serves every set
that includes it unchanged; only the user's own run is compiled. What the digit reads find of each
run's patterns is cached the same way (see `triage.engine.prefilter.digit_reads_of`).

A database file holds one JSON line (the patterns hyperscan refused), then the serialized database.
"""

from __future__ import annotations

import json
from typing import Any

from triage.kb.cache_files import by_content
from triage.engine.compiled import PrefilterState
from triage.engine.prefilter import Pattern, hyperscan_expression

FORMAT = 1
Compilable = tuple[bytes, int, int]
"""(expression, id, flags) for hyperscan."""
Compiled = tuple[bytes, list[str]]
"""A serialized database (empty bytes when no pattern was left) and the patterns it refused."""


def compile_runs(hyperscan: Any, runs: list[list[Pattern]]) -> PrefilterState:
    """One database per run of patterns, each from the cache when any KB set compiled it before."""
    blobs: list[bytes] = []
    unsupported: list[str] = []
    for run in filter(None, runs):
        blob, refused = _cached(hyperscan, run)
        blobs += [blob] if blob else []
        unsupported += refused
    return tuple(blobs), unsupported


def _cached(hyperscan: Any, run: list[Pattern]) -> Compiled:
    compilable = [(hyperscan_expression(pattern), ident, flags) for pattern, ident, flags in run]
    material = [f"{FORMAT}\0{getattr(hyperscan, '__version__', '?')}\n".encode()]
    material += [b"%d\0%d\0%s\n" % (ident, flags, expression) for expression, ident, flags in compilable]

    def build() -> bytes:
        blob, refused = compile_run(hyperscan, run, compilable)
        return json.dumps(refused).encode() + b"\n" + blob

    def decode(content: bytes) -> Compiled:
        head_end = content.index(b"\n")
        refused = [str(pattern) for pattern in json.loads(content[:head_end])]
        blob = content[head_end + 1 :]
        if blob:
            try:  # a damaged database fails here, not in a scan
                hyperscan.loadb(blob, mode=hyperscan.HS_MODE_BLOCK)
            except hyperscan.error as exc:
                raise ValueError("a damaged database") from exc
        return blob, refused

    return by_content("hs", b"".join(material), build, decode)


def compile_run(hyperscan: Any, patterns: list[Pattern], compiled: list[Compilable]) -> Compiled:
    """Compile patterns (`compiled`: the same, as hyperscan takes them) into one database, serialized
    for the KB cache (empty bytes when none is left)."""
    if not compiled:
        return b"", []
    try:
        return hyperscan.dumpb(_database(hyperscan, compiled)), []  # the usual case: one compile
    except hyperscan.error:
        refused = set(_refused(hyperscan, compiled))
    unsupported = [
        pattern if flags & hyperscan.HS_FLAG_CASELESS else f"(?-i:{pattern})"
        for (pattern, _, flags), (_, ident, _) in zip(patterns, compiled)
        if ident in refused
    ]
    kept = [item for item in compiled if item[1] not in refused]
    return (hyperscan.dumpb(_database(hyperscan, kept)) if kept else b""), unsupported


def _database(hyperscan: Any, items: list[Compilable]) -> Any:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[item[0] for item in items],
        ids=[item[1] for item in items],
        elements=len(items),
        flags=[item[2] for item in items],
    )
    return database


def _refused(hyperscan: Any, items: list[Compilable]) -> list[int]:
    """Ids of the expressions hyperscan cannot compile, found by halving: a few compiles per refused
    pattern instead of one per pattern."""
    try:
        _database(hyperscan, items)
        return []
    except hyperscan.error:
        if len(items) == 1:
            return [items[0][1]]
    middle = len(items) // 2
    return _refused(hyperscan, items[:middle]) + _refused(hyperscan, items[middle:])
