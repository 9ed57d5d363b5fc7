"""Files in the user's cache directory: where they live, how they are read back and written safely.

Every cache (the compiled KB, `triage.engine.kb_cache`; each KB directory's load,
`triage.kb.dir_cache`; the compiled hyperscan databases and digit reads, `triage.engine.hs_parts`)
keeps its files here, written atomically and read only when this user owns them, a few of each kind
kept, least recently used evicted first. TRIAGE_NO_CACHE=1 bypasses them all; TRIAGE_CACHE_DIR
moves them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

CACHE_DIR_ENV = "TRIAGE_CACHE_DIR"
NO_CACHE_ENV = "TRIAGE_NO_CACHE"
MAX_PARTS = 48
MAX_PART_BYTES = 96 << 20
T = TypeVar("T")


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_cache_dir("ascend-triage", appauthor=False))


def enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "") in ("", "0")


def code_version(*modules: ModuleType) -> bytes:
    """What identifies the code that made a cached file: a development checkout that edits one of
    these modules must not reuse what the old code made."""
    version = b""
    for module in modules:
        stat = os.stat(module.__file__ or "")
        version += f"{module.__name__}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
    return version


def read_own(path: Path) -> bytes | None:
    """The file's bytes when this user owns it (and it is then marked recently used); None otherwise."""
    try:
        with path.open("rb") as handle:
            if os.fstat(handle.fileno()).st_uid != os.getuid():
                return None  # someone else's file in our cache: never trusted
            content = handle.read()
        os.utime(path)  # recently used: evicted last
    except OSError:
        return None
    return content


def write_atomic(path: Path, content: bytes, *, keep: str, max_files: int, max_bytes: int) -> None:
    """Write then rename, so that concurrent runs never read a half-written file; then keep at most
    `max_files` files matching `keep` (a glob) and `max_bytes` of them. Never fatal: a read-only home
    must not stop a scan."""
    import tempfile  # with shutil, 15 ms of every start-up; only a cold build writes

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=".tmp-", delete=False) as handle:
            handle.write(content)
        os.replace(handle.name, path)
        _evict(path.parent, keep, max_files, max_bytes)
    except OSError:
        pass


def by_content(kind: str, material: bytes, build: Callable[[], bytes], decode: Callable[[bytes], T]) -> T:
    """`decode` of the file of this kind cached under a hash of `material`, or of `build()`, written
    for the next time. A file `decode` cannot read (ValueError, TypeError) is damaged: built again."""
    if not enabled():
        return decode(build())
    path = cache_dir() / f"{kind}-{hashlib.sha256(material).hexdigest()[:32]}.part"
    content = read_own(path)
    if content is not None:
        try:
            return decode(content)
        except (ValueError, TypeError):
            pass
    content = build()
    write_atomic(path, content, keep=f"{kind}-*.part", max_files=MAX_PARTS, max_bytes=MAX_PART_BYTES)
    return decode(content)


def _evict(directory: Path, keep: str, max_files: int, max_bytes: int) -> None:
    files = []
    for path in directory.glob(keep):
        try:
            stat = path.stat()
        except OSError:
            continue  # evicted by a concurrent run
        files.append((stat.st_mtime_ns, stat.st_size, path))
    files.sort(reverse=True)
    total = 0
    for count, (_, size, path) in enumerate(files, 1):
        total += size
        if count > max_files or (count > 1 and total > max_bytes):
            path.unlink(missing_ok=True)
