"""Build a ready-to-scan KB from the shipped KB and user directories."""

from __future__ import annotations

from pathlib import Path

from triage.engine.compiled import CompiledKB, compile_kb
from triage.kb.loader import KBError, load_kb
from triage.kb.paths import kb_dirs


def load_engine_kb(extra_dirs: list[str] | None = None, *, strict: bool = False) -> tuple[CompiledKB, list[KBError]]:
    """The shipped KB merged with TRIAGE_KB_PATH and `extra_dirs`.

    With strict=False a malformed entry is skipped and returned as an error, so that one bad user
    entry costs that entry, not the whole scan.
    """
    dirs: list[Path] = kb_dirs(extra_dirs)
    kb, errors = load_kb(dirs, strict=strict)
    return compile_kb(kb), errors
