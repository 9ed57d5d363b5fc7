"""`triage kb new`: draft a KB entry from a log, ready for a contributor to complete.

The draft picks the most distinctive error line, turns it into a regex (variable parts masked,
literals escaped) and a fuzzy template, guesses the category, uses the line as the `match`
example and a healthy line of the same log as the `no_match` example. Causes, fixes and
references are TODO placeholders, and the status is `draft` until they are filled in: a draft
ranks below curated entries and `triage kb validate --strict` refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triage.engine.compiled import TRIGGER_PATTERNS, CompiledKB
from triage.engine.normalize import decode_line, template
from triage.sources import SourceError, binary_line, read_chunks, read_stream

REGEX_WEIGHT = 3.0
"""High enough that the new entry outranks generic and loosely related entries on its own log."""
FUZZY_WEIGHT = 1.5
MAX_MESSAGE = 200
MAX_FUZZY = 150
MAX_KEY_LINES = 5
MAX_EXAMPLE = 2000
"""Characters of a log line an example keeps: a 1 MB line (a progress bar, a pasted blob) would make
the draft larger than the KB loader reads (see `triage.kb.loader`)."""
UNSURE_CATEGORY = "other"
"""When no known failure matches the key lines: a keyword guess ("overflow" -> nan_loss_scale) is
wrong often enough that an honest `other` for the contributor to change serves better."""
SURE_CONFIDENCE = 0.5
"""An existing entry must fire at least this strongly for its category to be suggested."""

_TRIGGER = re.compile("|".join(TRIGGER_PATTERNS), re.IGNORECASE)
_CODE = r"\b(?:[A-Z][A-Z0-9]\d{4}|ERR\d{5}|[1-5]0[07]\d{3})\b"
"""CANN error codes (EZ1001, EI0002), torch_npu codes (ERR00100) and 6-digit ACL codes (507015)."""
GENERIC_CODES = frozenset({"EZ9999", "EE9999", "EE8888", "E39999", "E19999", "ERR00100", "ERR99999"})
"""Wrapper codes that say "an inner error happened": never the distinctive part of a line."""

# (pattern, points): how strongly a line looks like the failure rather than chatter.
_ERROR_SCORES: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(_CODE), 4),
    (re.compile(r"(?<![\w.])[\w.]*(?:Error|Exception)\b:"), 3),  # from a name's start: linear on a long line
    (re.compile(r"\b(?:error|fail(?:ed|ure)?|fault|abort(?:ed)?|exception)\b", re.IGNORECASE), 2),
    (_TRIGGER, 1),
    (re.compile(r"^\W*(?:\[?W(?:ARN(?:ING)?)?\b|\[?I(?:NFO)?\b)|\bwarnings?\.warn|Warning:", re.IGNORECASE), -2),
)
_SKIP = re.compile(r"^\s*(?:File \".*\", line \d+|Traceback \(most recent call last\)|\^+\s*$)")
_HEALTHY = re.compile(
    r"\b(?:step|iter(?:ation)?|epoch)\b.*\b(?:loss|lr|it/s|s/it|tokens?/s|samples?/s)\b", re.IGNORECASE
)
_PREFIX = re.compile(
    r"^(?:\[[^\]]{0,80}\]:?|\d{4}[-/]\d{2}[-/]\d{2}(?:[ T-]\d{2}:\d{2}:\d{2}(?:[.,:]\d+)*|(?=\s))|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b:?|rank\s*\d+\s*:|[-|:])\s*",
    re.IGNORECASE,
)
# Variable parts of a message and the regex that stands for them (mirrors engine.normalize.template).
_TOKENS = re.compile(
    r"(?P<ts>\d{4}[-/]\d{2}[-/]\d{2}[ T-]\d{2}:\d{2}:\d{2}(?:[.,:]\d+)*|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b)"
    rf"|(?P<code>{_CODE})"
    r"|(?P<ip>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)"
    r"|(?P<hex>\b0x[0-9a-fA-F]+\b)"
    r"|(?P<path>(?:[\w.\-~]*/)+[\w.\-]+)"
    r"|(?P<hexid>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b)"
    r"|(?P<num>\d+(?:\.\d+)?)"
    r"|(?P<ws>\s+)"
)
_MASKS = {
    "ts": r"\d[\d:.,/T-]*(?: \d[\d:.,]*)?",
    "ip": r"\d+(?:\.\d+){3}(?::\d+)?",
    "hex": r"0x[0-9a-f]+",
    "path": r"\S+",
    "hexid": r"[0-9a-f]+",
    "num": r"\d+(?:\.\d+)?",
    "ws": r"\s+",
}
_STOP_WORDS = frozenset(
    "a an and are at be by for from in is it of on or the to was with n path hex ts ip error runtimeerror "
    "valueerror exception".split()
)


class ScaffoldError(Exception):
    """The log gives nothing to build an entry from; str() is one line."""


@dataclass
class Draft:
    data: dict[str, Any]
    """The entry, as it will be written."""
    key_line: str
    category_reason: str
    similar: list[tuple[str, float]]
    """Existing entries that already fire on the key line, with their confidence."""


def parse_range(text: str) -> tuple[int, int]:
    """'A-B' (1-based, inclusive) or 'A' -> (A, B)."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not match or int(match.group(1)) < 1 or (match.group(2) and int(match.group(2)) < int(match.group(1))):
        raise ScaffoldError(f"--lines {text!r}: expected A-B with 1 <= A <= B")
    return int(match.group(1)), int(match.group(2) or match.group(1))


def read_lines(raw: bytes, line_range: tuple[int, int] | None = None) -> list[str]:
    # Lines end at newlines only, as `triage scan` numbers them (a progress bar's CRs stay inside its
    # line). A binary line keeps its place (for --lines) but lends no words: they are chance bytes.
    raws = raw.split(b"\n")
    if raws[-1] == b"":
        raws.pop()
    if line_range is not None:
        first, last = line_range
        if first > len(raws):
            raise ScaffoldError(f"--lines {first}-{last}: the log has {len(raws)} lines")
        raws = raws[first - 1 : last]
    return ["" if binary_line(line) else decode_line(line) for line in raws]


def error_score(line: str) -> int:
    if not line.strip() or _SKIP.match(line) or (_HEALTHY.search(line) and not _TRIGGER.search(line)):
        return 0
    score = sum(points for pattern, points in _ERROR_SCORES if pattern.search(line))
    codes = set(re.findall(_CODE, line))
    if codes and codes <= GENERIC_CODES:
        score -= 3  # only a wrapper code: the specific message is on another line
    return score


def key_lines(lines: list[str]) -> list[str]:
    """The most error-like distinct lines (by template), best first, earliest first among equals."""
    best: dict[str, tuple[int, int, str]] = {}
    for index, line in enumerate(lines):
        score = error_score(line)
        if score >= 2:
            best.setdefault(template(line), (-score, index, line.strip()))
    return [line for _, _, line in sorted(best.values())[:MAX_KEY_LINES]]


def message_of(line: str) -> str:
    """The line without its log prefix (timestamps, [levels], [rankN]:), cut to a sensible length."""
    message = line.strip()
    while True:
        match = _PREFIX.match(message)
        if not match or not match.group(0) or match.end() >= len(message):
            break
        message = message[match.end() :]
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE].rsplit(" ", 1)[0]
    return message


def regex_for(message: str) -> str:
    parts: list[str] = []
    position = 0
    for token in _TOKENS.finditer(message):
        parts.append(re.escape(message[position : token.start()]))
        kind = token.lastgroup or ""
        parts.append(re.escape(token.group()) if kind == "code" else _MASKS[kind])
        position = token.end()
    parts.append(re.escape(message[position:]))
    regex = "".join(parts)
    # The mask must at least find its own line; if not, a plain literal is the honest fallback.
    return regex if re.search(regex, message, re.IGNORECASE) else re.escape(message)


def fuzzy_for(message: str) -> str | None:
    text = template(message)
    if len(text) > MAX_FUZZY:
        text = text[:MAX_FUZZY].rsplit(" ", 1)[0]
    return text if len(text) >= 12 else None


def derive_id(message: str) -> str:
    codes = [code.lower() for code in re.findall(_CODE, message) if code not in GENERIC_CODES]
    words = [w for w in re.findall(r"[a-z][a-z0-9]+", template(re.sub(_CODE, " ", message))) if w not in _STOP_WORDS]
    slug = "-".join((codes[:1] + words)[:6])[:48].strip("-")
    return slug if len(slug) >= 2 else "new-entry"


def derive_title(message: str) -> str:
    return message if len(message) <= 80 else message[:80].rsplit(" ", 1)[0] + " ..."


def healthy_line(lines: list[str], regex: str) -> str | None:
    """A line of the log that looks healthy and that the new regex does not match."""
    candidates = [line.strip() for line in lines if error_score(line) <= 0 and not _TRIGGER.search(line)]
    candidates.sort(key=lambda line: not _HEALTHY.search(line))  # step/loss lines first
    compiled = re.compile(regex, re.IGNORECASE)
    fitting = (line for line in candidates if 20 <= len(line) <= MAX_EXAMPLE and not compiled.search(line))
    return next(fitting, None)


def match_example(line: str, message: str) -> str:
    """The key line as its `match` example: cut after MAX_EXAMPLE characters, but never before the
    end of the message the regex was made from."""
    if len(line) <= MAX_EXAMPLE:
        return line
    return line[: max(MAX_EXAMPLE, line.find(message) + len(message))]


NEAREST_SURE = 75.0
"""How similar (0-100) the nearest known failures must be for a draft to take their category."""


def suggest_category(key: list[str], kb: CompiledKB | None) -> tuple[str, str, list[tuple[str, float]]]:
    """(category, why, similar entries): the category whose existing entries score best on the key
    lines, else `other`."""
    similar: list[tuple[str, float]] = []
    if kb is not None:
        from triage.engine.scanner import Scanner

        scanner = Scanner(kb)
        scanner.feed_text("\n".join(key), "new")
        scores: dict[str, float] = {}
        nearest: str | None = None
        for diagnosis in scanner.result().diagnoses:
            if diagnosis.guess and diagnosis.extracted.get("neighbour_similarity", 0.0) >= NEAREST_SURE:
                nearest = diagnosis.category  # the safety net's nearest known failures, when close
            if diagnosis.generic:
                continue
            similar.append((diagnosis.id, diagnosis.confidence))
            if diagnosis.confidence >= SURE_CONFIDENCE:
                scores[diagnosis.category] = scores.get(diagnosis.category, 0.0) + diagnosis.score
        if scores:
            best = max(scores, key=lambda category: scores[category])
            return best, f"existing {best} entries match these lines", similar
        if nearest is not None:
            return nearest, f"the nearest known failures are {nearest}: check it", similar
    return UNSURE_CATEGORY, "unsure: no known failure matches these lines; pick the category", similar


def draft_entry(
    lines: list[str],
    kb: CompiledKB | None,
    *,
    entry_id: str | None = None,
    category: str | None = None,
    title: str | None = None,
) -> Draft:
    key = key_lines(lines)
    if not key:
        raise ScaffoldError("no error-like line found in the log: pick the failing lines with --lines A-B")
    message = message_of(key[0])
    regex = regex_for(message)
    signatures: list[dict[str, Any]] = [{"regex": regex, "weight": REGEX_WEIGHT}]
    fuzzy = fuzzy_for(message)
    # Fuzzy signatures only look at lines with a trigger word, and templates mask numbers: a line
    # whose identity is its error code (507899) would get a fuzzy that matches every other code.
    specific_codes = set(re.findall(_CODE, message)) - GENERIC_CODES
    if fuzzy and _TRIGGER.search(key[0]) and not specific_codes:
        signatures.append({"fuzzy": fuzzy, "weight": FUZZY_WEIGHT})
    suggested, why, similar = suggest_category(key, kb)
    examples: dict[str, list[str]] = {"match": [match_example(key[0], message)]}
    healthy = healthy_line(lines, regex)
    if healthy:
        examples["no_match"] = [healthy]
    data: dict[str, Any] = {
        "id": entry_id or derive_id(message),
        "title": title or derive_title(message),
        "category": category or suggested,
        "severity": "error",
        "status": "draft",
        "summary": "TODO: what this error means and when it happens, in two or three sentences.",
        "signatures": signatures,
        "causes": [
            {
                "id": "todo-cause",
                "title": "TODO: the most likely cause",
                "prior": 0.5,
                "how_to_tell": "TODO: how to tell this cause from the others",
            }
        ],
        "fixes": [
            {
                "title": "TODO: a concrete fix",
                "addresses": ["todo-cause"],
                "description": "TODO: what to change and why",
            }
        ],
        "references": [
            {"document": "TODO: a URL or document that explains this message", "supports": "TODO: what it supports"}
        ],
        "examples": examples,
    }
    return Draft(data=data, key_line=key[0], category_reason=why if not category else "given", similar=similar)


def read_log(path: Path | None, stdin: Any, line_range: tuple[int, int] | None) -> list[str]:
    """Lines of the log at `path` (or standard input), one error line each: never a traceback. Read as
    `triage scan` reads it: gunzipped, UTF-16 re-encoded, binary data refused."""
    try:
        chunks = read_chunks(str(path)) if path is not None else read_stream(stdin.buffer, "-")
        raw = b"".join(chunks)
    except SourceError as exc:
        raise ScaffoldError(str(exc)) from None
    return read_lines(raw, line_range)
