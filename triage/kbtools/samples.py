"""Baseline logs that no entry may fire on: healthy runs and the honeypot, as labelled in
`logs_samples/labels.yaml` (and `labels-*.yaml` fragments, so branches can add labels without
conflicting edits).

The sample logs ship inside the wheel (`triage/_samples`), so that `triage kb validate` checks the
baselines wherever triage is installed, not only in a source checkout."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from triage.kb.loader import safe_yaml, yaml_problem
from triage.kb.paths import package_data_dir

PATH_KEYS = ("file", "log", "log_file", "path")
LIST_KEYS = ("logs", "samples", "entries", "cases")


@dataclass
class Baselines:
    healthy: list[Path] = field(default_factory=list)
    honeypot: list[Path] = field(default_factory=list)
    harmless: list[Path] = field(default_factory=list)
    """Harmless lines of healthy runs (`harmless: true`): no signature or cause pattern may match one.
    They are healthy logs too: no entry may fire on them."""
    notes: list[str] = field(default_factory=list)
    """Why some or all baselines were skipped, one line each."""


def default_samples_dir() -> Path:
    return package_data_dir("_samples", "logs_samples")


def load_baselines(samples_dir: Path) -> Baselines:
    found = Baselines()
    label_files = sorted(samples_dir.glob("labels.yaml")) + sorted(samples_dir.glob("labels-*.yaml"))
    if not label_files:
        found.notes.append(f"{samples_dir / 'labels.yaml'} not found: healthy-log and honeypot checks skipped")
        return found
    for labels in label_files:
        try:
            data = safe_yaml(labels.read_text(encoding="utf-8"))
        except OSError as exc:
            found.notes.append(f"{labels}: unreadable labels ({exc.strerror or exc}): skipped")
            continue
        except yaml.YAMLError as exc:
            found.notes.append(f"{labels}: unreadable labels ({yaml_problem(exc)}): skipped")
            continue
        for record in _records(data):
            path = _log_path(samples_dir, record)
            if path is None:
                continue
            if not path.is_file():
                found.notes.append(f"{labels}: labelled log {path} does not exist: skipped")
            elif record.get("honeypot") is True:
                found.honeypot.append(path)
            elif record.get("healthy") is True or record.get("harmless") is True:
                found.healthy.append(path)
                if record.get("harmless") is True:
                    found.harmless.append(path)
    return found


def _records(data: Any) -> list[dict[str, Any]]:
    """Label records from the shapes a labels file may take: a list, a mapping holding a list, or
    a mapping of file name to attributes."""
    if isinstance(data, dict):
        for key in LIST_KEYS:
            if isinstance(data.get(key), list):
                return _records(data[key])
        return [{"file": name, **attrs} for name, attrs in data.items() if isinstance(attrs, dict)]
    if isinstance(data, list):
        return [record for record in data if isinstance(record, dict)]
    return []


def _log_path(samples_dir: Path, record: dict[str, Any]) -> Path | None:
    name = next((record[key] for key in PATH_KEYS if isinstance(record.get(key), str)), None)
    if name is None:
        return None
    path = Path(name)
    if path.is_absolute():
        return path
    # Labels may name logs relative to logs_samples/ or to the project root.
    inside = samples_dir / path
    return inside if inside.exists() or path.parts[0] != samples_dir.name else samples_dir.parent / path
