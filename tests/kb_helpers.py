"""Small synthetic KB entries for the KB-tooling tests: independent of the shipped KB's content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def entry_data(entry_id: str, category: str = "segfault", **overrides: Any) -> dict[str, Any]:
    marker = f"ZQX-{entry_id.upper()} synthetic failure"
    data: dict[str, Any] = {
        "id": entry_id,
        "title": f"Synthetic {entry_id}",
        "category": category,
        "summary": "A synthetic entry for tests.",
        "signatures": [{"text": marker, "weight": 3}],
        "examples": {"match": [f"RuntimeError: {marker}"], "no_match": ["step 1 | loss 0.5"]},
    }
    data.update(overrides)
    return data


def write_entry(kb: Path, data: dict[str, Any], *, folder: str | None = None, name: str | None = None) -> Path:
    path = kb / (folder or data["category"]) / f"{name or data['id']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
