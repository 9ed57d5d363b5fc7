"""Bounded repeats loosened for the prefilter: `X{m,n}` as `X{m,}`.

Hyperscan's compile time grows with bounded repeats (`[^\\n]{0,120}`, `.{0,40}`): the KB's thousand
signatures took seconds to compile, most of it for them. The prefilter only flags lines that Python's
`re` then confirms with the signature as written, so any pattern that matches at least what the
signature matches will do, and an unbounded repeat matches every text the bounded one does.
"""

from __future__ import annotations

import re

_BOUNDED = re.compile(r"\{(\d*),(\d+)\}")
LOOSEN_FROM = 8
"""Repeats with a smaller upper bound cost hyperscan little and keep the prefilter tight."""


def unbounded_repeats(pattern: str) -> str:
    """`pattern` with each `{m,n}` quantifier (n >= LOOSEN_FROM) made `{m,}`, `*` or `+`; escapes
    and character classes (where a brace is a literal) are copied as they are."""
    out: list[str] = []
    index, in_class, size = 0, False, len(pattern)
    while index < size:
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # `[]...]` and `[^]...]`: a `]` right after the opening is a member, not the end.
            opening = re.match(r"\[\^?\]?", pattern[index:])
            assert opening is not None
            out.append(opening.group())
            index += len(opening.group())
            continue
        elif char == "{" and (bounded := _BOUNDED.match(pattern, index)) and int(bounded.group(2)) >= LOOSEN_FROM:
            low = int(bounded.group(1) or 0)
            out.append("*" if low == 0 else "+" if low == 1 else f"{{{low},}}")
            index = bounded.end()
            continue
        out.append(char)
        index += 1
    return "".join(out)
