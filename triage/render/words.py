"""Counts as every face says them; plain text, no rich, so that commands without a console can use it."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"
