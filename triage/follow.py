"""Follow log files like `tail -F`: through rotation and truncation, picking up files a glob matches later.

Polling rather than inotify: it behaves the same on every OS and on network or container file
systems where change notifications get lost, and at 50 ms it costs two stats per file per poll.

File descriptors are bounded: a file is opened when it changes and kept open while it is active,
and past MAX_OPEN_FILES the least recently active ones are closed (a closed file is watched with
`stat` alone). Following thousands of rank files cannot exhaust `ulimit -n`, which would also
blind the glob that looks for new files.
"""

from __future__ import annotations

import glob
import os
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from triage.sources import FollowedText, unfollowable

READ_SIZE = 1 << 20
MAX_READ_PER_POLL = 16 << 20
"""One fast-growing file cannot hold up the others (or a Ctrl-C) for long."""
RESCAN_SECONDS = 0.5
"""How often globs are expanded again; reading open files happens at every poll."""
QUIET_AFTER = 300.0
"""Seconds without a new line after which a followed log counts as stopped where it ends (a hang):
longer than a step, a checkpoint save or a first compile usually takes to print something."""


def _max_open_files() -> int:
    # A quarter of the soft limit leaves room for the scanner, the terminal and the glob itself.
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(8, min(256, soft // 4)) if soft != resource.RLIM_INFINITY else 256


MAX_OPEN_FILES = _max_open_files()


class Sink(Protocol):
    """Where the bytes go: a Scanner or a LiveScan."""

    def feed(self, data: bytes, source: str) -> object: ...

    def finish(self, source: str) -> object: ...


Notify = Callable[[str], None]
"""Receives one-line messages for the user: a missing file, a rotation, a truncation."""


@dataclass
class _Followed:
    path: str
    handle: BinaryIO | None
    """Open while the file is active; None when closed to save descriptors (reopened on change)."""
    identity: tuple[int, int]
    """(device, inode) of the file we follow; a different one under `path` means rotation."""
    position: int
    active_at: float = 0.0
    """When bytes last came from it: the least recently active are closed first."""
    text: FollowedText = field(default_factory=FollowedText)


def _head(handle: BinaryIO) -> bytes:
    """The file's first bytes, read without moving the handle (b"" where it cannot seek)."""
    try:
        return os.pread(handle.fileno(), 2, 0)
    except OSError:
        return b""


def _is_glob(pattern: str) -> bool:
    return any(char in pattern for char in "*?[")


class Follower:
    def __init__(
        self,
        patterns: Sequence[str],
        sink: Sink,
        *,
        from_start: bool = False,
        notify: Notify,
        rescan_seconds: float = RESCAN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        max_open: int = MAX_OPEN_FILES,
        quiet_after: float | None = None,
        on_quiet: Callable[[str], None] | None = None,
    ) -> None:
        self._patterns = [os.path.expanduser(pattern) for pattern in patterns]
        self._sink = sink
        self._from_start = from_start
        self._notify = notify
        self._rescan_seconds = rescan_seconds
        self._clock = clock
        self._max_open = max_open
        self._followed: dict[str, _Followed] = {}
        self._told: set[str] = set()
        """Keys of problems already reported, so that a missing file is not reported at every poll."""
        self._unfollowable: set[str] = set()
        """Compressed and binary files a pattern matched: named once, never followed."""
        self._next_rescan = 0.0
        self._started = False
        self._quiet_after = quiet_after
        self._on_quiet = on_quiet
        self._quiet: set[str] = set()
        """Files reported quiet (`on_quiet`) and silent since: each quiet spell is reported once."""

    @property
    def paths(self) -> list[str]:
        return list(self._followed)

    def poll(self) -> int:
        """Read whatever was written since the last poll; returns the number of bytes read."""
        now = self._clock()
        if now >= self._next_rescan:
            self._discover()
            self._next_rescan = now + self._rescan_seconds
        read = sum(self._read_more(followed) for followed in list(self._followed.values()))
        self._report_quiet(self._clock())
        return read

    def close(self) -> None:
        """Stop following: each source's last line is scanned even without its newline."""
        for followed in list(self._followed.values()):
            self._drop(followed)

    # -- internals -----------------------------------------------------------------------------

    def _report_quiet(self, now: float) -> None:
        """Tell `on_quiet` of each file that has written nothing for `quiet_after` seconds, once a
        spell: a job that hangs prints nothing more, and its last line says where it stopped."""
        if self._quiet_after is None or self._on_quiet is None:
            return
        for followed in self._followed.values():
            if followed.path not in self._quiet and now - followed.active_at >= self._quiet_after:
                self._quiet.add(followed.path)
                self._on_quiet(followed.path)

    def _tell_once(self, key: str, message: str) -> None:
        if key not in self._told:
            self._told.add(key)
            self._notify(message)

    def _discover(self) -> None:
        # Files there when we start hold history; files that appear later are new, read them whole.
        at_end = not self._started and not self._from_start
        self._started = True
        for pattern in self._patterns:
            if not _is_glob(pattern):
                if pattern not in self._followed:
                    self._start(pattern, at_end=at_end)
                continue
            matches = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
            if not matches:
                self._tell_once(pattern, f"{pattern}: no file matches yet; waiting for one")
            for path in matches:
                if path not in self._followed:
                    self._start(path, at_end=at_end)

    def _start(self, path: str, *, at_end: bool) -> None:
        if path in self._unfollowable:
            return
        reason = unfollowable(path)
        if reason is not None:  # a rotated-away log (rank0.log.1.gz), or a core file a glob caught
            self._unfollowable.add(path)
            if reason == "compressed":
                self._notify(f"{path}: compressed, not followed; read it with `triage scan {path}`")
            else:
                self._notify(f"{path}: binary data, not a text log; not followed")
            return
        try:
            handle = open(path, "rb", buffering=0)  # held open while active; closed in _close_idle or _drop
            status = os.fstat(handle.fileno())
        except FileNotFoundError:
            self._tell_once(path, f"{path}: no such file yet; waiting for it")
            return
        except IsADirectoryError:
            self._tell_once(path, f"{path}: is a directory (give the files inside it, e.g. {path}/*)")
            return
        except OSError as exc:
            self._tell_once(path, f"{path}: {exc.strerror or exc}; retrying")
            return
        position = handle.seek(0, os.SEEK_END) if at_end else 0
        followed = _Followed(path, handle, (status.st_dev, status.st_ino), position, self._clock())
        if position:
            followed.text.join_at(_head(handle))
        self._followed[path] = followed
        self._told.discard(path)
        self._close_idle()

    def _read_more(self, followed: _Followed) -> int:
        if followed.handle is None and not self._reopen(followed):
            return 0
        count = 0
        while count < MAX_READ_PER_POLL:
            chunk = self._next_chunk(followed)
            if chunk is None:
                return count
            if not chunk:
                break
            count += len(chunk)
            self._sink.feed(chunk, followed.path)
        if count:
            followed.active_at = self._clock()
            self._quiet.discard(followed.path)
        # Only after draining: the lines written to the old file before it was rotated come first.
        if self._replaced(followed):
            self._drop(followed)
            self._start(followed.path, at_end=False)
        return count

    def _reopen(self, followed: _Followed) -> bool:
        """Open a closed file again when `stat` says it changed; False when there is nothing to read."""
        try:
            status = os.stat(followed.path)
        except OSError:
            return self._replaced(followed) and self._restart(followed)
        if (status.st_dev, status.st_ino) != followed.identity:
            return self._replaced(followed) and self._restart(followed)
        if status.st_size == followed.position:
            return False
        try:
            handle = open(followed.path, "rb", buffering=0)  # noqa: SIM115 - closed in _close_idle or _drop
        except OSError:
            return False  # out of descriptors or briefly unreadable: the next poll tries again
        handle.seek(followed.position)
        followed.handle, followed.active_at = handle, self._clock()
        self._close_idle()
        return True

    def _restart(self, followed: _Followed) -> bool:
        self._drop(followed)
        self._start(followed.path, at_end=False)
        return False

    def _close_idle(self) -> None:
        open_ones = [f for f in self._followed.values() if f.handle is not None]
        for idle in sorted(open_ones, key=lambda f: f.active_at)[: max(0, len(open_ones) - self._max_open)]:
            if idle.handle is not None:  # always, by the filter above; says so to the type checker
                idle.handle.close()
                idle.handle = None

    def _next_chunk(self, followed: _Followed) -> bytes | None:
        """The next bytes (b"" at the end for now), or None when the file cannot be read any more.

        Only file errors are caught here: an error from the sink (a closed stdout) is not the file's.
        """
        if followed.handle is None:  # closed as idle by an earlier file's read
            return b""
        try:
            if os.fstat(followed.handle.fileno()).st_size < followed.position:
                # Truncated in place (copytruncate, `: > file`): what is there now is all new.
                self._notify(f"{followed.path}: file truncated; reading it from the start")
                followed.position = followed.handle.seek(0)
            chunk = followed.handle.read(READ_SIZE)
        except OSError as exc:
            self._notify(f"{followed.path}: {exc.strerror or exc}; no longer followed")
            self._drop(followed)
            return None
        from_start = followed.position == 0
        followed.position += len(chunk)
        return followed.text.recode(chunk, from_start=from_start) if chunk else chunk

    def _replaced(self, followed: _Followed) -> bool:
        try:
            status = os.stat(followed.path)
        except OSError:
            self._tell_once(followed.path, f"{followed.path}: deleted or moved; waiting for it to reappear")
            return True
        if (status.st_dev, status.st_ino) == followed.identity:
            return False
        self._notify(f"{followed.path}: replaced (rotated); following the new file")
        return True

    def _drop(self, followed: _Followed) -> None:
        del self._followed[followed.path]
        self._quiet.discard(followed.path)
        if followed.handle is not None:
            followed.handle.close()
        self._sink.finish(followed.path)
