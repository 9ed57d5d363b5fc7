"""Build a ready-to-scan KB from the shipped KB and user directories."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from triage.engine import kb_cache
from triage.kb.cache_files import enabled as cache_enabled
from triage.engine.compiled import CompiledKB, compile_kb
from triage.engine.prefilter import build_prefilter, compile_databases, digit_reads_of
from triage.kb.paths import kb_dirs


def load_engine_kb(
    extra_dirs: list[str] | None = None,
    *,
    strict: bool = False,
    include_shipped: bool = True,
    building: Callable[[], None] | None = None,
) -> tuple[CompiledKB, list[str]]:
    """The shipped KB merged with TRIAGE_KB_PATH and `extra_dirs`, and one-line load errors.

    With strict=False a malformed entry is skipped and reported, so that one bad user entry costs
    that entry, not the whole scan. A cached compiled KB is used while no KB file has changed.
    include_shipped=False leaves out the shipped KB (tests pin small fixture KBs with it).
    `building` is called before a build that the cache cannot spare (seconds, not a blink).
    """
    dirs: list[Path] = kb_dirs(extra_dirs, include_shipped=include_shipped)
    fingerprint = kb_cache.fingerprint(dirs)
    key, other = (fingerprint + "-strict", fingerprint) if strict else (fingerprint, fingerprint + "-strict")
    if cache_enabled():
        cached = kb_cache.load(key)
        if cached is not None:
            return cached
        # A build without errors is what the strict and the lenient load both give: `kb validate
        # --strict` and the scan after it share one build.
        cached = kb_cache.load(other)
        if cached is not None and not cached[1]:
            return cached
    if building is not None:
        building()
    from triage.kb.loader import load_kb  # YAML and validation: only when the cache misses

    kb, errors = load_kb(dirs, strict=strict)
    compiled = compile_kb(kb)
    # Fills compiled.prefilter_state so that the cache carries the databases, the native scan's too.
    compile_databases(compiled)
    build_prefilter(compiled).digit_candidates(b"")
    digit_reads_of(compiled)
    payload = (compiled, [str(error) for error in errors])
    if cache_enabled():
        kb_cache.store(key, payload)
    return payload


EMPTY_KB = "the knowledge base is empty; check --kb and TRIAGE_KB_PATH"


def load_reported_kb(
    extra_dirs: list[str],
    *,
    include_shipped: bool = True,
    warn: Callable[[str], None],
    building: Callable[[], None] | None = None,
) -> CompiledKB:
    """`load_engine_kb` for a face: each skipped entry, and an empty KB, is said through `warn`."""
    kb, errors = load_engine_kb(extra_dirs, include_shipped=include_shipped, building=building)
    if errors:
        # The loader brings pydantic and YAML: a tenth of a second of start-up, for nothing to say.
        from triage.kb.loader import report_skipped

        report_skipped(errors, warn)
    if not kb.entries:
        warn(EMPTY_KB)
    return kb
