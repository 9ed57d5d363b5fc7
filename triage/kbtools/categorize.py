"""Guess an entry's category from error text by keyword rules (used by `kb new` and importers)."""

from __future__ import annotations

import re

DEFAULT_CATEGORY = "segfault"
"""For text no rule recognises: most unrecognised Ascend failures are device or process crashes
(AI Core exceptions, hardware faults, abnormal exits), which is what `segfault` collects."""

# First match wins, so the order goes from the most specific wording to the most general:
# "HCCL ... out of memory" is an OOM, "op not supported ... version" is an unsupported op.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (category, re.compile(pattern, re.IGNORECASE))
    for category, pattern in (
        (
            "npu_oom",
            r"out of memory|\boom\b|tried to allocate|insufficient (?:device |high-bandwidth )?memory|memory (?:is )?(?:insufficient|not enough)",
        ),
        (
            "unsupported_op",
            r"not (?:currently )?supported|unsupported|npu_cpu_fallback|fall(?:s|ing)? ?back to (?:run on )?(?:the )?cpu|not implemented|\bEZ(?:1001|3003)\b",
        ),
        ("nan_loss_scale", r"\bnan\b|\binf\b|overflow|loss[ _]scal"),
        (
            "hccl_timeout",
            r"hccl|\bnotify\b|time(?:s|d)?[ _]?out|link down|\brdma\b|connection (?:refused|reset)|\bhang|all_?reduce|all_?gather|broadcast|\bbarrier\b",
        ),
        (
            "dynamic_shape_compile",
            r"compil|dynamic shape|dynamo|torchair|graph mode|aclgraph|op build|build (?:op|kernel)",
        ),
        (
            "env_version",
            r"version|mismatch|incompatible|undefined symbol|shared object|no such file|environment variable|package|not installed|importerror|modulenotfound|ld_library_path|set_env",
        ),
        (
            "segfault",
            r"segmentation|sigsegv|core dump|ai ?core|aivec|hwts|\buce\b|\becc\b|abort|crash|device (?:lost|disconnect)|exception",
        ),
    )
)


def category_from_text(text: str) -> str | None:
    """The category of the first keyword rule that `text` matches, or None."""
    for category, pattern in _RULES:
        if pattern.search(text):
            return category
    return None
