"""Which rank a line or a file belongs to, from prefixes such as `[rank3]:` or names such as `rank_3.log`."""

from __future__ import annotations

import re
from enum import Enum

_LINE_RANK = re.compile(
    r"\[rank\s*(\d+)\]|\brank(?:id)?\s*[:=]\s*(\d+)|\bglobal_rank\s*[:=]?\s*(\d+)|\[default(\d+)\]:"
    r"|\bdevice(?:id)?\s*[:=]\s*(\d+)",
    re.IGNORECASE,
)
_FILE_RANK = re.compile(r"(?<![a-z])(?:rank|worker|proc|node|device)[_\-.]?(\d{1,5})(?!\d)", re.IGNORECASE)
"""A rank in a file's name (`rank_3.log`, `worker-3`, `node2`): a word of its own and a rank's few digits,
not the end of another word with a code or a date after it (`setdevice-507033.log`, `worker-20240101.log`)."""


RankAt = tuple[int, int] | None
"""Where a line's rank is written (see `rank_span`), None where it names none."""


class Unread(Enum):
    UNREAD = "unread"


UNREAD = Unread.UNREAD
"""Where a line's rank is written is not known: it is searched for."""


def rank_of_line(text: str) -> int | None:
    span = rank_span(text)
    return None if span is None else int(text[span[0] : span[1]])


def rank_span(text: str) -> RankAt:
    """Where a line's rank is written, if it is. No pattern here tells one digit from another, so
    the lines of one shape (digits masked) write theirs in the same place: a shape's span reads
    the rank of each of its lines."""
    match = _LINE_RANK.search(text[:200])
    if not match:
        return None
    return next(match.span(n) for n, group in enumerate(match.groups(), 1) if group is not None)


def key_rank_span(key: bytes) -> RankAt | Unread:
    """Where the lines of a shape (its key: see `normalize.shape_key`) write their rank. Hex ids
    of different lengths may come before it: then each line's rank is searched for."""
    return UNREAD if b"<id>" in key else rank_span(key[:200].decode("latin-1"))


def rank_of_source(name: str) -> int | None:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    match = _FILE_RANK.search(base)
    return int(match.group(1)) if match else None
