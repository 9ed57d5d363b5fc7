"""An on-disk cache of the compiled KB, so `triage scan` of a small log starts in a blink.

Loading YAML and validating entries with pydantic costs far more than scanning a small log. The
cache holds the compiled KB as plain data (dicts, lists, strings, numbers) in marshal's format,
twice as fast to read as the same JSON, followed by the hyperscan databases as hyperscan's own
serialized bytes (raw: as base64 inside the data they took a third of the load time): reading it
back builds data only and runs nothing, so a file planted in the cache directory cannot run code,
and a file owned by another user is ignored. Each KB set (the shipped KB, each user KB dir, the
content of every entry file, the package version) has its own file; a few are kept side by side,
least recently used evicted first. An entry file's size and modification time stand for
its content, as those of the engine's modules stand for the code. Set TRIAGE_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
from pathlib import Path
from typing import Any

from triage import __version__
from triage.engine import (
    anchors,
    codes,
    compiled,
    context,
    digits,
    error_lines,
    literal_gate,
    nearest,
    normalize,
    prefilter,
    repeats,
)
from triage.kb.cache_files import cache_dir, code_version, new_digest, read_own, write_atomic
from triage.engine.compiled import CauseCard, CompiledKB, CompiledSignature, EntryCard, PrefilterState
from triage.engine.nearest import reported_cases
from triage.kb.paths import CASES_FILE, CODES_FILE, NEIGHBOURS_FILE

FORMAT = 14
"""Bumped when the layout or the meaning of a cached database changes; 1 was the pickle format,
2 held cause-evidence patterns in the main prefilter database, 3 had no digit reads, 4 held the
databases as base64 inside the JSON, 5 one database per prefilter set (not one per KB directory),
6 no reported cases, 7 no overridden entries kept switched off, 8 held the data as a line of JSON,
9 no literals of the engine's gated patterns, 10 no stall entries, 11 the escapes only a text
pattern knows (`\\u2018`) given to hyperscan as written (it refused them), 12 reported cases without
their stack, 13 no word model of the neighbours."""
MAX_FILES = 8
MAX_TOTAL_BYTES = 64 << 20
_SIZE_BYTES = 8
Payload = tuple[CompiledKB, list[str]]
"""The compiled KB and the one-line errors of entries skipped while loading it."""


def fingerprint(dirs: list[Path]) -> str:
    digest = new_digest(f"{__version__}\0{FORMAT}".encode())
    # What the cached data means (prefilter flags and context triggers, signature fields) lives in these
    # modules: a development checkout that edits them must not reuse an old cache.
    digest.update(
        code_version(
            anchors, codes, compiled, context, prefilter, repeats, digits, error_lines, literal_gate, nearest, normalize
        )
    )
    for directory in dirs:
        digest.update(b"\0dir\0" + str(directory.resolve()).encode())
        for path in sorted(_kb_files(directory)):
            # As for the code above: size and modification time tell an edit, without reading every
            # entry on every scan (a fifth of a small log's start-up when the files were hashed).
            try:
                stat = path.stat()
            except OSError:
                continue
            digest.update(f"{path.relative_to(directory)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _kb_files(directory: Path) -> list[Path]:
    """The files of a KB directory that a compiled KB is made from, found in one walk."""
    wanted = {NEIGHBOURS_FILE, CODES_FILE, CASES_FILE}
    found: list[Path] = []
    for folder, _, names in os.walk(directory):
        found += [Path(folder, name) for name in names if name.endswith(".yaml") or name in wanted]
    return found


def _path(key: str) -> Path:
    return cache_dir() / f"kb-{key}.cache"


def load(key: str) -> Payload | None:
    content = read_own(_path(key))
    if content is None:
        return None
    try:
        payload, rows = _from_bytes(content)
    except Exception:  # a stale, damaged or planted cache is rebuilt, never fatal
        return None
    literal_gate.use_gate_rows(rows)
    return payload


def store(key: str, payload: Payload) -> None:
    write_atomic(_path(key), _to_bytes(payload), keep="kb-*.cache", max_files=MAX_FILES, max_bytes=MAX_TOTAL_BYTES)
    try:
        for old in [*cache_dir().glob("kb-*.pickle"), *cache_dir().glob("kb-*.json")]:  # former formats
            old.unlink(missing_ok=True)
    except OSError:
        pass


def _to_bytes(payload: Payload) -> bytes:
    """The data's size (8 bytes), the data, then each database's bytes in order."""
    data = marshal.dumps(_to_data(payload))
    blobs = [blob for parts, _ in payload[0].prefilter_state.values() for blob in parts]
    return len(data).to_bytes(_SIZE_BYTES, "little") + data + b"".join(blobs)


def _from_bytes(content: bytes) -> tuple[Payload, list[literal_gate.GateRow]]:
    offset = _SIZE_BYTES + int.from_bytes(content[:_SIZE_BYTES], "little")
    data = marshal.loads(content[_SIZE_BYTES:offset])
    if not isinstance(data, dict):
        raise ValueError("not a compiled KB")
    state: dict[str, PrefilterState] = {}
    for name, sizes, unsupported in data["prefilter_state"]:
        parts = []
        for size in sizes:
            if offset + size > len(content):
                raise ValueError("a truncated cache")
            parts.append(content[offset : offset + size])
            offset += size
        state[name] = (tuple(parts), list(unsupported))
    return _from_data(data, state), data["gate_rows"]


def _to_data(payload: Payload) -> dict[str, Any]:
    kb, errors = payload
    return {
        "format": FORMAT,
        "errors": errors,
        "entries": [dataclasses.asdict(entry) for entry in kb.entries],
        "signatures": [_fields(signature) for signature in kb.signatures],
        "exact": list(kb.exact),
        "fuzzy": list(kb.fuzzy),
        "neighbours": [list(row) for row in kb.neighbours],
        "codes": [list(row) for row in kb.codes],
        "cases": [list(row) for row in kb.cases],
        # Counted once here (13 ms), not at each scan's first guess: read back in under a millisecond.
        "word_counts": kb.neighbour_index.word_counts(),
        "gate_rows": literal_gate.gate_rows(),
        "prefilter_state": [
            [name, [len(blob) for blob in parts], unsupported]
            for name, (parts, unsupported) in kb.prefilter_state.items()
        ],
    }


def _fields(signature: CompiledSignature) -> dict[str, Any]:
    # Declared fields only: the compiled regexes are cached properties and compile again on first use.
    return {field.name: getattr(signature, field.name) for field in dataclasses.fields(signature)}


def _from_data(data: dict[str, Any], state: dict[str, PrefilterState]) -> Payload:
    if data.get("format") != FORMAT:
        raise ValueError("another cache format")
    entries = tuple(
        EntryCard(
            **{
                **entry,
                "causes": tuple(
                    CauseCard(**{**cause, "conditions": tuple(tuple(c) for c in cause["conditions"])})
                    for cause in entry["causes"]
                ),
                "fixes": tuple(entry["fixes"]),
                "probes": tuple(entry["probes"]),
                "references": tuple(entry["references"]),
                "related": tuple(entry["related"]),
            }
        )
        for entry in data["entries"]
    )
    signatures = tuple(
        CompiledSignature(
            **{
                **signature,
                "exclude_sources": tuple(signature["exclude_sources"]),
                "extract_sources": tuple(tuple(extract) for extract in signature["extract_sources"]),
            }
        )
        for signature in data["signatures"]
    )
    kb = CompiledKB(
        entries,
        signatures,
        tuple(data["exact"]),
        tuple(data["fuzzy"]),
        prefilter_state=state,
        neighbours=tuple((row[0], row[1], row[2]) for row in data["neighbours"]),
        codes=tuple((row[0], row[1], row[2]) for row in data["codes"]),
        cases=reported_cases(data["cases"]),
        word_counts=data["word_counts"],
    )
    return kb, [str(error) for error in data["errors"]]
