"""Load the KB for the app, optionally without the shipped KB (tests pin a small fixture KB)."""

from __future__ import annotations

from triage.engine.compiled import CompiledKB, compile_kb
from triage.engine.setup import load_engine_kb
from triage.kb.loader import KBError, load_kb
from triage.kb.paths import kb_dirs


def load_app_kb(extra_dirs: list[str], *, include_shipped: bool = True) -> tuple[CompiledKB, list[KBError]]:
    if include_shipped:
        return load_engine_kb(extra_dirs)
    kb, errors = load_kb(kb_dirs(extra_dirs, include_shipped=False), strict=False)
    return compile_kb(kb), errors
