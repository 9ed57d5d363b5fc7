"""An on-disk cache of the compiled KB, so `triage scan` of a small log starts in a blink.

Loading YAML and validating entries with pydantic costs far more than scanning a small log. The
cache holds the compiled KB (and the prefilter database) keyed by the name, size and mtime of every
KB file, so any edit to an entry invalidates it. Set TRIAGE_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from triage import __version__
from triage.engine import compiled, prefilter
from triage.engine.compiled import CompiledKB

CACHE_DIR_ENV = "TRIAGE_CACHE_DIR"
NO_CACHE_ENV = "TRIAGE_NO_CACHE"
Payload = tuple[CompiledKB, list[str]]
"""The compiled KB and the one-line errors of entries skipped while loading it."""


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ascend-triage"


def fingerprint(dirs: list[Path]) -> str:
    digest = hashlib.sha256(__version__.encode())
    # The pickled classes live in these modules: editing them must invalidate old caches too.
    for module in (compiled, prefilter):
        stat = os.stat(module.__file__ or "")
        digest.update(f"{module.__name__}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    for directory in dirs:
        digest.update(b"\0dir\0" + str(directory.resolve()).encode())
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*.yaml")):
            try:
                stat = path.stat()
            except OSError:
                continue
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "") in ("", "0")


def load(key: str) -> Payload | None:
    path = cache_dir() / f"kb-{key}.pickle"
    try:
        with path.open("rb") as handle:
            payload = pickle.load(handle)
    except FileNotFoundError:
        return None
    except Exception:  # a stale or damaged cache is rebuilt, never fatal
        return None
    if not (isinstance(payload, tuple) and len(payload) == 2 and isinstance(payload[0], CompiledKB)):
        return None
    return payload


def store(key: str, payload: Payload) -> None:
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # Write then rename, so that concurrent runs never read a half-written cache.
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".kb-", delete=False) as handle:
            pickle.dump(payload, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, directory / f"kb-{key}.pickle")
        for old in directory.glob("kb-*.pickle"):
            if old.name != f"kb-{key}.pickle":
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home must not stop a scan
