"""Shared pieces of the TUI tests: the fixture KB and log, and a probe runner that really runs a process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from triage.tui.app import TriageApp

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_KB = "tests/fixtures/tui_kb"
TRAIN_LOG = "tests/fixtures/logs/train.log"
"""Relative to ROOT (tests chdir there): evidence shows source names, and snapshots must not hold a checkout path."""

ALLOCATOR_RESULT = {
    "probe": "allocator",
    "version": 1,
    "device": "npu:0",
    "status": "finding",
    "findings": [
        {
            "id": "inactive-split",
            "message": "30.2 GiB reserved but inactive in split blocks",
            "evidence": {"inactive_split_bytes": 32427003084},
            "confirms": ["fragmentation"],
            "rules_out": ["true-capacity"],
        }
    ],
    "seconds": 0.1,
}


def subprocess_probe_runner(name: str) -> dict[str, Any]:
    """Runs a tiny probe-shaped script, so the app's probe path crosses a real process boundary."""
    result = (
        {**ALLOCATOR_RESULT, "probe": name} if name == "allocator" else {"probe": name, "status": "ok", "findings": []}
    )
    script = f"import sys; sys.stdout.write({json.dumps(result)!r})"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def make_app(paths: list[str] | None = None, **options: Any) -> TriageApp:
    options.setdefault("probe_runner", subprocess_probe_runner)
    return TriageApp(
        paths if paths is not None else [TRAIN_LOG], kb_dirs=[FIXTURE_KB], include_shipped_kb=False, **options
    )


async def settle(pilot: Pilot[Any]) -> None:
    """Let the workers finish and their messages land."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
