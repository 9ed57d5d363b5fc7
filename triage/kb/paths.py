"""Where knowledge-base directories are found: the shipped one, then user directories."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "TRIAGE_KB_PATH"
CODES_FILE = "codes.tsv"
"""Error codes and the category each points at (code, category, meaning), beside the entries."""
NEIGHBOURS_FILE = "neighbours.tsv"
"""Labelled error lines of real failures (category, label, line), beside the entries of a KB dir:
the safety net's neighbours besides the entries' own examples. Written by scripts/build_neighbours.py."""


CASES_FILE = "cases.tsv"
"""What the threads behind the neighbours' corpus cases said (label, thread URL, root cause, the fix the
thread confirmed or nothing), for a guess to point at a similar reported failure. Written with the
neighbours file."""


def package_data_dir(installed: str, checkout: str) -> Path:
    """Data shipped with triage: `triage/<installed>` inside the wheel, or `<checkout>/` of a source checkout."""
    package_dir = Path(__file__).resolve().parent.parent
    inside = package_dir / installed
    return inside if inside.is_dir() else package_dir.parent / checkout


def shipped_kb_dir() -> Path:
    """The KB that ships with triage."""
    return package_data_dir("_kb", "kb")


def user_kb_dirs(explicit: list[str] | None = None) -> list[Path]:
    """User KB dirs, lowest priority first: TRIAGE_KB_PATH entries, then --kb options."""
    dirs = [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    dirs += [Path(p) for p in explicit or []]
    return dirs


def kb_dirs(explicit: list[str] | None = None, *, include_shipped: bool = True) -> list[Path]:
    """All KB dirs in merge order: later ones override entries with the same id."""
    return ([shipped_kb_dir()] if include_shipped else []) + user_kb_dirs(explicit)
