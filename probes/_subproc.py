"""Run a probe process that must print one JSON object, and classify every way it can go wrong.

Shared by the op_support probe (one child per op) and triage.probing.runner (one child per probe),
so both report crashes, hangs and junk output with the same one-line wording.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

MAX_STDOUT = 1 << 20
"""A probe prints one small JSON object; beyond this its output is discarded (and counted)."""
STDERR_KEPT = 64 << 10
READ_SIZE = 64 << 10
POLL_SECONDS = 0.1


@dataclasses.dataclass
class ChildOutcome:
    result: dict[str, Any] | None
    error: str | None
    returncode: int | None
    stderr_tail: str
    timed_out: bool = False


@functools.cache
def probes_only_dir() -> str:
    """A temporary directory holding nothing but a link to this ``probes`` package.

    The package's real parent is often the site-packages of triage's own environment; putting that
    on the job Python's path could shadow the job's torch or torch_npu with triage's.
    """
    parent = Path(__file__).absolute().parent.parent
    if os.listdir(parent) == ["probes"]:  # already imported through such a directory: reuse it
        return str(parent)
    tmp = tempfile.mkdtemp(prefix="triage-probes-")
    os.symlink(Path(__file__).resolve().parent, os.path.join(tmp, "probes"))
    atexit.register(shutil.rmtree, tmp, True)
    return tmp


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The current environment with a directory holding only ``probes/`` first on PYTHONPATH."""
    env = dict(os.environ)
    parts = [probes_only_dir(), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env.update(extra or {})
    return env


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_json_child(
    cmd: list[str], *, timeout: float, env: dict[str, str] | None = None, own_group: bool = True
) -> ChildOutcome:
    """``own_group``: start the child in a new process group and kill the whole group on timeout,
    so grandchildren (op_support's per-op processes) cannot outlive it and keep holding the device.
    Those grandchildren pass False and stay in their parent's group for the same reason."""
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env if env is not None else child_env(),
            start_new_session=own_group,
        )
    except OSError as exc:
        return ChildOutcome(None, f"cannot start {cmd[0]}: {exc.strerror or exc}", None, "")
    deadline = time.monotonic() + timeout
    out, err, dropped = _collect(proc, deadline)
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(proc, own_group)
        proc.wait()
        return ChildOutcome(None, f"timed out after {timeout:g}s (killed)", proc.returncode, _tail(err), True)
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    if dropped:
        return ChildOutcome(
            None,
            f"printed more than {MAX_STDOUT >> 20} MB on stdout ({dropped} bytes discarded)",
            proc.returncode,
            _tail(err),
        )
    stderr_tail = _tail(err)
    if proc.returncode < 0:
        return ChildOutcome(None, f"killed by {signal_name(proc.returncode)}", proc.returncode, stderr_tail)
    if proc.returncode != 0:
        last = stderr_tail.strip().splitlines()[-1:] or ["no stderr"]
        return ChildOutcome(
            None, f"exited with status {proc.returncode}: {last[0][:200]}", proc.returncode, stderr_tail
        )
    text = out.decode("utf-8", "replace").strip()
    try:
        result = json.loads(text)
    except ValueError:
        return ChildOutcome(None, f"printed output that is not one JSON object: {text[:80]!r}", 0, stderr_tail)
    if not isinstance(result, dict):
        return ChildOutcome(None, f"printed JSON that is not an object: {text[:80]!r}", 0, stderr_tail)
    return ChildOutcome(result, None, 0, stderr_tail)


def _collect(proc: subprocess.Popen[bytes], deadline: float) -> tuple[bytes, bytes, int]:
    """The child's stdout (up to MAX_STDOUT), the end of its stderr, and how many stdout bytes were dropped.

    Stops at the deadline, at end of file, or once the child has exited and its pipes are quiet: a
    descendant that escaped the group (setsid) and still holds them is not waited for.
    """
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()  # type: ignore[union-attr]
    out, err = bytearray(), bytearray()
    dropped = 0
    open_fds = [out_fd, err_fd]
    while open_fds and time.monotonic() < deadline:
        exited = proc.poll() is not None
        ready = select.select(open_fds, [], [], min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))[0]
        if not ready and exited:
            break
        for fd in ready:
            chunk = os.read(fd, READ_SIZE)
            if not chunk:
                open_fds.remove(fd)
            elif fd == out_fd:
                kept = chunk[: MAX_STDOUT - len(out)]
                out += kept
                dropped += len(chunk) - len(kept)
            else:
                err += chunk
                del err[:-STDERR_KEPT]
    return bytes(out), bytes(err), dropped


def _kill(proc: subprocess.Popen[bytes], group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass


def _tail(data: bytes, limit: int = 2000) -> str:
    return data.decode("utf-8", "replace")[-limit:]
