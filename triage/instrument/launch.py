"""Start a `triage run` child with the instrumentation injected."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

INSTRUMENT_DIR = Path(__file__).resolve().parent


def instrumented_env(record_path: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    # First on PYTHONPATH so that our sitecustomize wins; it then runs the one it shadows.
    parts = [str(INSTRUMENT_DIR), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["TRIAGE_RECORD_PATH"] = str(record_path)
    # Line-by-line output so the log scanner sees an error as it happens, not at exit.
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def launch(
    cmd: list[str], record_path: Path, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` with stdout and stderr merged into one pipe (bytes) and the recorder active.

    The job gets its own session and process group, which triage then answers for as a whole
    (see `triage.instrument.job`): the terminal's Ctrl-C reaches triage, which forwards it.
    """
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=instrumented_env(record_path, env),
        cwd=cwd,
        start_new_session=True,
    )
