"""Own a `triage run` job: its whole process group, the signals meant for it, and an end that comes.

The job runs in its own session (see `launch`), so triage forwards what it receives (Ctrl-C,
SIGTERM from a scheduler, SIGHUP) to the job's whole group, and escalates to SIGKILL when the group
is still there a grace period later: a job that ignores signals cannot hang triage, and none of
its processes is left holding NPUs. Output is read with a poll, not a blocking read: a background
descendant that inherited the pipe (`sleep 25 & exit 3`) does not keep triage waiting after the
job itself has exited.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from types import FrameType

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DEFAULT_GRACE_SECONDS = 10.0
POLL_SECONDS = 0.1
DRAIN_SECONDS = 1.0
"""After the job exits, what is still in the pipe is read for at most this long."""


class Job:
    """A job, readable like a stream (`read` returns b"" once it is over).

    The signal handlers go in before the job starts (`start` inside the `with` block): a Ctrl-C
    that lands between the start and the handlers would otherwise leave the job's group running.
    """

    def __init__(
        self,
        *,
        grace: float = DEFAULT_GRACE_SECONDS,
        quiet_after: float | None = None,
        on_quiet: Callable[[], None] | None = None,
    ) -> None:
        self.grace = grace
        self._quiet_after = quiet_after
        self._on_quiet = on_quiet
        """Told once a spell when the job has printed nothing for `quiet_after` seconds: a hang."""
        self._output_at = time.monotonic()
        self.signalled: int | None = None
        """The first signal triage received and forwarded, if any."""
        self._kill_at: float | None = None
        self._exited_at: float | None = None
        self._previous: dict[int, object] = {}
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self._process is not None, "start the job first"
        return self._process

    def __enter__(self) -> Job:
        for sig in FORWARDED:
            self._previous[sig] = signal.signal(sig, self._forward)
        return self

    def start(self, process: subprocess.Popen[bytes]) -> None:
        """Take charge of the started job; a signal that came before it is forwarded now."""
        self._process = process
        self._fd = process.stdout.fileno()  # type: ignore[union-attr]
        if self.signalled is not None:
            self._signal_group(self.signalled)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        if self._process is not None:
            self.stop()

    def read(self, size: int) -> bytes:
        """The next output (up to `size` bytes); b"" when the job has exited and its pipe is drained."""
        while True:
            self._escalate_when_due()
            exited = self.process.poll() is not None
            if exited and self._exited_at is None:
                self._exited_at = time.monotonic()
            if exited and time.monotonic() - self._exited_at > DRAIN_SECONDS:  # type: ignore[operator]
                return b""
            if select.select([self._fd], [], [], POLL_SECONDS)[0]:
                self._output_at = time.monotonic()
                return os.read(self._fd, size)  # b"" at end of file: every writer closed the pipe
            if exited:
                return b""  # quiet after the exit: whoever still holds the pipe is not waited for
            self._note_quiet()

    def stop(self) -> int:
        """End what is left of the job's group (TERM, then KILL after the grace) and reap the job."""
        if self.process.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(self.grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
        code = self.process.wait()
        # Descendants that outlived the job (same group) go too, with the same grace.
        if self._group_alive():
            self._signal_group(signal.SIGTERM)
            deadline = time.monotonic() + self.grace
            while self._group_alive() and time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)
            self._signal_group(signal.SIGKILL)
        self.process.stdout.close()  # type: ignore[union-attr]
        return code

    def _forward(self, signum: int, _frame: FrameType | None) -> None:
        if self.signalled is not None:
            self._signal_group(signal.SIGKILL)  # asked twice: no more waiting
            return
        self.signalled = signum
        self._kill_at = time.monotonic() + self.grace
        self._signal_group(signum)

    def _note_quiet(self) -> None:
        if self._quiet_after is None or self._on_quiet is None:
            return
        if time.monotonic() - self._output_at >= self._quiet_after:
            self._output_at = float("inf")  # once a spell: the next output starts the clock again
            self._on_quiet()

    def _escalate_when_due(self) -> None:
        if self._kill_at is not None and time.monotonic() >= self._kill_at:
            self._kill_at = None
            self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: int) -> None:
        if self._process is None:
            return  # not started yet: `start` forwards the signal
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone already

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return _has_live_member(self.process.pid)


def _has_live_member(group: int) -> bool:
    """Whether a process of `group` is more than a zombie; True where /proc cannot tell.

    A killed orphan stays a group member until init reaps it, which some container inits do
    late: counting zombies would hold triage for the whole grace period.
    """
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False
