"""A KB regex as the prefilter searches it: in raw bytes, not text.

The prefilter runs over the bytes of a read (hyperscan, or Python's `re` on bytes for what hyperscan
refuses), and only then is a line decoded and confirmed with the regex as written. Python's `re`
knows escapes in text patterns that a bytes pattern refuses (`\\u2018`, `\\U0001F600`, `\\N{EM DASH}`):
a KB regex that quotes a curly quote so compiled for the text and made every scan fail on its bytes.
"""

from __future__ import annotations

import re
import sys
import unicodedata

_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|.)", re.DOTALL)


def text_escapes_as_characters(pattern: str) -> str:
    """`pattern` with each escape only a text pattern knows written as the character it names
    (escaped where the regex syntax needs it); every other escape is copied as it is. In UTF-8 the
    character is its bytes, which is what a bytes search needs; inside a character class its bytes
    stand apart, a wider class, which a prefilter may be."""

    def character(found: re.Match[str]) -> str:
        escape = found.group(1)
        if escape[0] in "uU" and len(escape) > 1:
            code = int(escape[1:], 16)
            return re.escape(chr(code)) if code <= sys.maxunicode else found.group(0)
        if escape.startswith("N{"):
            try:
                return re.escape(unicodedata.lookup(escape[2:-1]))
            except KeyError:
                return found.group(0)  # an unknown name: `re` says so when it compiles the text
        return found.group(0)

    return _ESCAPE.sub(character, pattern)


def bytes_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be searched in bytes (None when it can), for a one-line KB error."""
    return compile_error(text_escapes_as_characters(pattern).encode("utf-8"))


def compile_error(expression: bytes) -> str | None:
    """Why a bytes expression does not compile as the prefilter compiles it (None when it does)."""
    try:
        re.compile(expression, re.IGNORECASE)
    except re.error as exc:
        return str(exc)
    return None
