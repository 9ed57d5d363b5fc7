"""Confirm that an exact signature matches a line, under the rules that keep evidence honest.

The prefilter only says a pattern may match; this decides whether the hit counts:

- a bare numeric code (`\\b507035\\b`) counts only on a line that reports an error: the same number
  in a metric (`tokens/s=507035`) says nothing about the NPU;
- a cause's evidence pattern counts only as whole words, in the case it declares: written
  `[Cc]ompil(?:e|ing)`, it is the word "compile", not `compiler_depend.ts` (the file name of
  torch_npu's most frequent warning) nor `COMPILE`.

The scanner and `triage kb validate` (the harmless-lines check) both confirm through here.
"""

from __future__ import annotations

import re
from functools import lru_cache

from triage.engine.anchors import after_prefix
from triage.engine.compiled import CompiledSignature
from triage.engine.error_lines import error_kind
from triage.engine.literal_gate import GatedPattern, gate_text

_CASE_PAIR = re.compile(r"\[([A-Za-z])([A-Za-z])\]")
_CODE_CONTEXT = (
    GatedPattern(r"(?i:error[ _]?code|ret(?:urn)?[ _]?code|errno|runtime result|traceback)"),
    GatedPattern(r"E(?<!\wE)(?:RR\d{5}|[A-Z]\d{4})\b"),
)
"""Words that make a number an error code even on a line that is not an error (a warning that
quotes one: `Warning: NPU warning, error code is 507018`)."""


def confirm(signature: CompiledSignature, text: str) -> re.Match[str] | None:
    """The match that counts for `signature` in `text`, or None."""
    regex = _cause_regex(signature.regex_source or "") if signature.cause is not None else signature.regex
    assert regex is not None, "fuzzy signatures are not confirmed here"
    for match in regex.finditer(text):
        if signature.cause is not None and not _whole_words(text, match):
            continue
        if match.group().isdigit() and not error_context(text):
            continue
        return None if signature.excluded(text) else match
    return None


def only_inside_words(source: str, text: str) -> str | None:
    """What a cause's evidence pattern finds in `text` when it finds it only inside words, where it never
    counts (a stem written for a word: `initiali` for `initialize`, `SetDevice` in `rtSetDevice`); None
    when it counts there or finds nothing. For `triage kb validate`, on the entry's own examples."""
    found = list(_cause_regex(source).finditer(text))
    if not found or any(_whole_words(text, match) for match in found):
        return None
    return found[0].group()


def error_context(text: str) -> bool:
    """Whether a number on this line may be an error code."""
    gated = gate_text(text)
    return any(pattern.search(text, gated) for pattern in _CODE_CONTEXT) or error_kind(text) is not None


def declares_case(pattern: str) -> bool:
    """Whether a pattern spells out the cases it accepts (`[Cc]ompile`): then it means them."""
    return any(lower.lower() == upper.lower() and lower != upper for lower, upper in _CASE_PAIR.findall(pattern))


@lru_cache(maxsize=1024)
def _cause_regex(source: str) -> re.Pattern[str]:
    widened = after_prefix(source)
    return re.compile(widened) if declares_case(source) else re.compile(widened, re.IGNORECASE)


def _whole_words(text: str, match: re.Match[str]) -> bool:
    start, end = match.span()
    if start > 0 and _word(text[start - 1]) and start < end and _word(text[start]):
        return False
    return not (end < len(text) and _word(text[end]) and end > start and _word(text[end - 1]))


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"
