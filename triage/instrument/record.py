"""Read what the instrumented job recorded, and phrase it as probe-style evidence for the ranking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _record_files(path: Path) -> list[Path]:
    """The record and the per-rank ones beside it (not the writers' half-written temp files)."""
    ranks = [p for p in sorted(path.parent.glob(path.name + ".rank*")) if not p.name.endswith(".tmp")]
    return [path, *ranks]


def clear_record(path: Path) -> None:
    for old in _record_files(path):
        old.unlink(missing_ok=True)


def read_record(path: Path) -> dict[str, Any]:
    """The record of rank 0 (or the only process), with the init counts of every rank's record.

    Missing or half-written files read as empty: the job may not have reached the recorder yet.
    """
    records: dict[str, dict[str, Any]] = {}
    for candidate in _record_files(path):
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            records[candidate.name] = data
    if not records:
        return {}
    main = dict(records.get(path.name) or next(iter(records.values())))
    if len(records) > 1:
        main["init_process_group_calls_by_file"] = {
            name: data.get("init_process_group_calls", 0) for name, data in records.items()
        }
    return main


def record_as_probe_result(record: dict[str, Any]) -> dict[str, Any]:
    """A probe-shaped result: two or more init calls in one process confirm the double-init cause."""
    counts = record.get("init_process_group_calls_by_file") or {"": record.get("init_process_group_calls", 0)}
    most = max((int(count) for count in counts.values()), default=0)
    findings = []
    if most >= 2:
        findings.append(
            {
                "id": "init-called-twice",
                "message": f"init_process_group called {most} times in one process",
                "evidence": counts,
                "confirms": ["double-init"],
                "rules_out": [],
            }
        )
    elif most == 1:
        findings.append(
            {
                "id": "init-called-once",
                "message": "init_process_group called once per process",
                "evidence": counts,
                "confirms": [],
                "rules_out": ["double-init"],
            }
        )
    return {"probe": "run-record", "status": "finding" if most >= 2 else "ok", "findings": findings}
