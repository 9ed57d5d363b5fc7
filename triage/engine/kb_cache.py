"""An on-disk cache of the compiled KB, so `triage scan` of a small log starts in a blink.

Loading YAML and validating entries with pydantic costs far more than scanning a small log. The
cache holds the compiled KB as plain JSON (the hyperscan database as hyperscan's own serialized
bytes): reading it back builds data only, so a file planted in the cache directory cannot run code,
and a file owned by another user is ignored. Each KB set (the shipped KB, each user KB dir, the
content of every entry file, the package version) has its own file; a few are kept side by side,
least recently used evicted first. Set TRIAGE_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from triage import __version__
from triage.engine import codes, compiled, context, digits, error_lines, nearest, normalize, prefilter
from triage.engine.compiled import CauseCard, CompiledKB, CompiledSignature, EntryCard, PrefilterState
from triage.kb.paths import CODES_FILE, NEIGHBOURS_FILE

CACHE_DIR_ENV = "TRIAGE_CACHE_DIR"
NO_CACHE_ENV = "TRIAGE_NO_CACHE"
FORMAT = 4
"""Bumped when the JSON layout or the meaning of a cached database changes; 1 was the pickle format,
2 held cause-evidence patterns in the main prefilter database, 3 had no digit reads."""
MAX_FILES = 8
MAX_TOTAL_BYTES = 64 << 20
Payload = tuple[CompiledKB, list[str]]
"""The compiled KB and the one-line errors of entries skipped while loading it."""


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_cache_dir("ascend-triage", appauthor=False))


def fingerprint(dirs: list[Path]) -> str:
    digest = hashlib.sha256(f"{__version__}\0{FORMAT}".encode())
    # What the cached data means (prefilter flags and context triggers, signature fields) lives in these
    # modules: a development checkout that edits them must not reuse an old cache.
    for module in (codes, compiled, context, prefilter, digits, error_lines, nearest, normalize):
        stat = os.stat(module.__file__ or "")
        digest.update(f"{module.__name__}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    for directory in dirs:
        digest.update(b"\0dir\0" + str(directory.resolve()).encode())
        if not directory.is_dir():
            continue
        for path in sorted(
            [*directory.rglob("*.yaml"), *directory.rglob(NEIGHBOURS_FILE), *directory.rglob(CODES_FILE)]
        ):
            try:
                content = path.read_bytes()
            except OSError:
                continue
            digest.update(f"{path.relative_to(directory)}\0".encode() + hashlib.sha256(content).digest())
    return digest.hexdigest()[:32]


def enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "") in ("", "0")


def _path(key: str) -> Path:
    return cache_dir() / f"kb-{key}.json"


def load(key: str) -> Payload | None:
    path = _path(key)
    try:
        with path.open("rb") as handle:
            if os.fstat(handle.fileno()).st_uid != os.getuid():
                return None  # someone else's file in our cache: never trusted
            data = json.load(handle)
        payload = _from_data(data)
        os.utime(path)  # recently used: evicted last
    except Exception:  # a missing, stale, damaged or foreign cache is rebuilt, never fatal
        return None
    return payload


def store(key: str, payload: Payload) -> None:
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # Write then rename, so that concurrent runs never read a half-written cache.
        with tempfile.NamedTemporaryFile("w", dir=directory, prefix=".kb-", suffix=".tmp", delete=False) as handle:
            json.dump(_to_data(payload), handle, separators=(",", ":"))
        os.replace(handle.name, _path(key))
        _evict(directory)
    except OSError:
        pass  # a read-only home must not stop a scan


def _evict(directory: Path) -> None:
    """Keep at most MAX_FILES caches and MAX_TOTAL_BYTES, dropping the least recently used first."""
    for old in directory.glob("kb-*.pickle"):  # the former format: code, not data
        old.unlink(missing_ok=True)
    files = []
    for path in directory.glob("kb-*.json"):
        try:
            stat = path.stat()
        except OSError:
            continue  # evicted by a concurrent run
        files.append((stat.st_mtime_ns, stat.st_size, path))
    files.sort(reverse=True)
    total = 0
    for count, (_, size, path) in enumerate(files, 1):
        total += size
        if count > MAX_FILES or (count > 1 and total > MAX_TOTAL_BYTES):
            path.unlink(missing_ok=True)


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
        "prefilter_state": {
            name: [base64.b64encode(blob).decode("ascii"), unsupported]
            for name, (blob, unsupported) in kb.prefilter_state.items()
        },
    }


def _fields(signature: CompiledSignature) -> dict[str, Any]:
    # Declared fields only: the compiled regexes are cached properties and compile again on first use.
    return {field.name: getattr(signature, field.name) for field in dataclasses.fields(signature)}


def _from_data(data: dict[str, Any]) -> Payload:
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
    state: dict[str, PrefilterState] = {
        name: (base64.b64decode(blob), list(unsupported))
        for name, (blob, unsupported) in data["prefilter_state"].items()
    }
    kb = CompiledKB(
        entries,
        signatures,
        tuple(data["exact"]),
        tuple(data["fuzzy"]),
        prefilter_state=state,
        neighbours=tuple((row[0], row[1], row[2]) for row in data["neighbours"]),
        codes=tuple((row[0], row[1], row[2]) for row in data["codes"]),
    )
    return kb, [str(error) for error in data["errors"]]
