"""Files in the user's cache directory: where they live, how they are read back and written safely.

Every cache (the compiled KB, `triage.engine.kb_cache`; each KB directory's load,
`triage.kb.dir_cache`; the compiled hyperscan databases and digit reads, `triage.engine.hs_parts`)
keeps its files here, written atomically and read only when this user owns them, a few of each kind
kept, least recently used evicted first. TRIAGE_NO_CACHE=1 bypasses them all; TRIAGE_CACHE_DIR
moves them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TypeVar

CACHE_DIR_ENV = "TRIAGE_CACHE_DIR"
NO_CACHE_ENV = "TRIAGE_NO_CACHE"
MAX_PARTS = 48
MAX_PART_BYTES = 96 << 20
T = TypeVar("T")

try:
    # hashlib's own BLAKE2, without hashlib: importing hashlib loads OpenSSL, 2-5 ms of every scan's
    # start-up, and the cache keys need no more than a sound digest.
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b


def new_digest(data: bytes = b"") -> blake2b:
    """A digest for cache keys: its hexdigest() is 32 characters."""
    return blake2b(data, digest_size=16)


APP = "ascend-triage"


def cache_dir() -> Path:
    """TRIAGE_CACHE_DIR, else the platform's user cache directory (the paths platformdirs gives,
    without its import: a sixth of a small scan's start-up)."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / APP / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return Path(xdg if os.path.isabs(xdg) else Path.home() / ".cache") / APP


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
    for the next time. A file `decode` cannot read (ValueError, TypeError) is damaged: built again.
    Concurrent runs that miss the same file build it once: the others wait for it (see `_building`)."""
    if not enabled():
        return decode(build())
    path = cache_dir() / f"{kind}-{new_digest(material).hexdigest()}.part"
    found = _decoded(path, decode)
    if found is not None:
        return found[0]
    with _building(path):
        found = _decoded(path, decode)  # another run may have built it while this one waited
        if found is not None:
            return found[0]
        content = build()
        write_atomic(path, content, keep=f"{kind}-*.part", max_files=MAX_PARTS, max_bytes=MAX_PART_BYTES)
    return decode(content)


def _decoded(path: Path, decode: Callable[[bytes], T]) -> tuple[T] | None:
    content = read_own(path)
    if content is None:
        return None
    try:
        return (decode(content),)
    except (ValueError, TypeError):
        return None


@contextmanager
def _building(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside `path` while building it. Two scans started together after an
    install, or two test workers, would otherwise both spend seconds compiling the same databases:
    the second waits, then reads what the first wrote. Where locks are not to be had (no fcntl, a
    read-only cache) each run builds on its own, as before."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_suffix(".lock"), "wb")  # noqa: SIM115 - closed below
    except (ImportError, OSError):
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            # Gone before the lock is let go: a run that comes later finds the built file instead.
            Path(handle.name).unlink(missing_ok=True)


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
