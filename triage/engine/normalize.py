"""Turn raw log bytes into clean text, and lines into templates.

A template masks what varies between otherwise identical lines (numbers, hex, addresses, paths,
timestamps, PIDs, ranks, IPs), so the same message from eight ranks or a million steps is matched
once, not a million times.
"""

from __future__ import annotations

import re

from triage.sources import as_text

DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
"""For `bytes.translate`: lines that differ only in their numbers become one shape."""

HEX_ID = re.compile(
    rb"(?<![0-9A-Za-z])"
    rb"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{20,}|[0-9A-F]{20,})"
    rb"(?![0-9A-Za-z])"
)
"""A long hex id (see `triage.engine.hex_ids`): a UUID, or at least 20 hex digits in one case."""
HEX_DIGITS = bytes(ord("h") if chr(byte) in "0123456789abcdefABCDEF" else ord(".") for byte in range(256))
"""For `bytes.translate`: every hex digit as 'h', anything else as '.'."""


def masked_ids(raw: bytes) -> bytes | None:
    """The line's shape with its hex ids masked, or None when it holds none."""
    masked = without_ids(raw)
    return masked.translate(DIGITS_TO_ZERO) if masked is not raw else None


def without_ids(raw: bytes) -> bytes:
    """The line with its hex ids written `<id>` (the line itself when it holds none): a request id
    that happens to start `910b` names no chip."""
    if b"hhhhhhhh" not in raw.translate(HEX_DIGITS):
        return raw  # every id has eight hex digits in a row: most lines are ruled out in C
    masked, count = HEX_ID.subn(b"<id>", raw)
    return masked if count else raw


def shape_key(raw: bytes) -> bytes:
    """A line's shape, as the scan counts its repeats: its digits masked, and its long hex ids too
    (nothing the KB looks for lies inside one: see `triage.engine.hex_ids`). A serving log's failed
    requests, each with its own id, are then one shape, matched once."""
    return masked_ids(raw) or raw.translate(DIGITS_TO_ZERO)


def mask_digits(text: str) -> str:
    """The text with its digits 1-9 as '0', as `DIGITS_TO_ZERO` does to bytes: through UTF-8 (whose
    multi-byte characters hold no ASCII digit), ten times faster than `str.translate`, which looks
    every character up in a dict."""
    return text.encode("utf-8", "surrogatepass").translate(DIGITS_TO_ZERO).decode("utf-8", "surrogatepass")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ANSI_BYTES = re.compile(_ANSI.pattern.encode())


def without_colours(data: bytes, start: int, end: int) -> tuple[bytes, int, int]:
    """data[start:end] without its terminal escape sequences, and where it now starts and ends. The
    prefilter reads bytes: a colour code glued to a message (`\\x1b[31mATC run failed`) ends in a word
    character, so `\\bATC` found no word start there, and 49 of the KB's 707 match examples went unnamed
    in colour. Most logs hold none: a memchr, 14 ms a 512 MiB log."""
    if data.find(b"\x1b", start, end) < 0:
        return data, start, end
    data = _ANSI_BYTES.sub(b"", data[start:end])
    return data, 0, len(data)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_ANY_DIGIT = re.compile(r"\d")
_TEMPLATE_MASKS: tuple[tuple[str | None, re.Pattern[str], str], ...] = (
    # (a string the pattern cannot match without, or None for a digit; the pattern; its mask):
    # the guard skips a regex pass on most lines, which is most of a template's cost.
    (":", re.compile(r"\d{4}[-/]\d{2}[-/]\d{2}[ T-]\d{2}:\d{2}:\d{2}(?:[.,:]\d+)*"), "<ts>"),
    (":", re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<ts>"),
    (".", re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    ("0x", re.compile(r"\b0x[0-9a-f]+\b"), "<hex>"),
    # Starting only where a path can start: from inside a long run of word characters with no slash
    # after it, each start failed after reading the rest of the run (a 16 KB line: 0.45 s).
    ("/", re.compile(r"(?<![\w.\-~/])(?:[\w.\-~]*/)+[\w.\-]+"), "<path>"),
    (None, re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b"), "<hex>"),
    (None, re.compile(r"\d+(?:\.\d+)?"), "<n>"),
)


def decode_line(raw: bytes) -> str:
    """Decode one line: UTF-8, else GBK (Chinese-locale CANN logs), else Latin-1 (never fails)."""
    text = as_text(raw)
    return clean_text(raw.decode("latin-1") if text is None else text)


def clean_text(text: str) -> str:
    """Strip ANSI colour codes, carriage returns and other control characters."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = text.rstrip("\r\n")
    if "\r" in text:
        # Progress bars redraw with bare CRs; keep every segment so no error text is lost.
        text = text.replace("\r", " ")
    return _CONTROL.sub("", text)


def template(text: str) -> str:
    """The line's template: lower case, variable parts masked, whitespace collapsed."""
    out = text.lower()
    for needed, pattern, replacement in _TEMPLATE_MASKS:
        if needed in out if needed is not None else _ANY_DIGIT.search(out):
            out = pattern.sub(replacement, out)
    return " ".join(out.split())  # whitespace runs collapsed (str.split's whitespace is re's \s)
