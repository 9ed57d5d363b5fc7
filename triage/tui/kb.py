"""Load the KB for the app, optionally without the shipped KB (tests pin a small fixture KB)."""

from __future__ import annotations

from triage.engine.compiled import CompiledKB
from triage.engine.setup import load_engine_kb


def load_app_kb(extra_dirs: list[str], *, include_shipped: bool = True) -> tuple[CompiledKB, list[str]]:
    return load_engine_kb(extra_dirs, include_shipped=include_shipped)
