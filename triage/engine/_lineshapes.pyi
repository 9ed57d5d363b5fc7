"""Types of the compiled line-shape table (see _lineshapes.c for what it does)."""

from collections.abc import Sequence
from mmap import mmap

QUIET: int
CAUSE: int
ACTIVE: int
GROUPED: int
TALLIED: int
MAX_RANK_DIGITS: int

TallyPart = tuple[int, int, int, int, int, int, int, int, int, int, tuple[tuple[int, int, int], ...]]

class Shapes:
    lines: int
    def __init__(self, limit: int = 65536, long_line: int = 16384) -> None: ...
    def classify(self, buffer: bytes, start: int, end: int, /) -> list[tuple[int, int, int, int]]: ...
    def segments(self, buffer: bytes, start: int, end: int, /) -> list[tuple[int, int]]: ...
    def held(self, reach: list[list[tuple[int, int]]], tail: int, last: int, /) -> list[tuple[int, int, int, int]]: ...
    def register(
        self,
        line: bytes,
        kind: int,
        group: int = 0,
        masked: bool = False,
        named: int = 0,
        coded: int = 0,
        rank_start: int = -1,
        rank_end: int = -1,
        entries: Sequence[int] | None = None,
        supports: Sequence[int] | None = None,
        /,
    ) -> int: ...
    def tallies(self) -> list[tuple[int, tuple[TallyPart, ...]]]: ...
    def register_group(
        self,
        line: bytes,
        kind: int = ...,
        rank_start: int = -1,
        rank_end: int = -1,
        entries: Sequence[int] | None = None,
        supports: Sequence[int] | None = None,
        group: int = 0,
        /,
    ) -> int: ...
    def set_codes(self, codes: tuple[tuple[bytes, bool, bool], ...], /) -> None: ...
    def __len__(self) -> int: ...

def count_newlines(buffer: bytes | mmap, start: int, end: int, /) -> int: ...
