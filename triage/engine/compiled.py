"""The KB compiled for matching: every signature flattened, regexes compiled, fuzzy texts templated."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from triage.engine.normalize import template
from triage.kb.loader import KnowledgeBase
from triage.kb.models import Entry, ExtractKind, Signature

# Lines that may carry a reworded error message. Fuzzy signatures only look at lines that contain
# one of these, which keeps fuzzy matching off the millions of healthy step lines.
TRIGGER_PATTERNS: tuple[str, ...] = (
    r"error",
    r"\berr\d",
    r"fail",
    r"exception",
    r"fault",
    r"abort",
    r"time[d ]?\s?out",
    r"\bnan\b",
    r"overflow",
    r"out of memory",
    r"\boom\b",
    r"not (?:currently )?support",
    r"unsupported",
    r"not implemented",
    r"fall(?:s|ing)? ?back",
    r"segmentation",
    r"core dump",
    r"sig(?:segv|abrt|bus|kill)",
    r"killed",
    r"undefined symbol",
    r"cannot open",
    r"no such file",
    r"mismatch",
    r"incompatible",
    r"traceback",
    r"\b[A-Z][A-Z0-9]\d{4}\b",
    r"recompil",
    r"hang",
    r"stuck",
    r"invalid",
    r"illegal",
    r"deadlock",
)


@dataclass(frozen=True)
class CompiledSignature:
    index: int
    entry: int
    cause: str | None
    """None for the entry's own signatures; a cause id for that cause's evidence."""
    kind: Literal["text", "regex", "fuzzy"]
    pattern: str
    weight: float
    min_score: float
    regex: re.Pattern[str] | None
    fuzzy_template: str | None
    excludes: tuple[re.Pattern[str], ...]
    extract: tuple[tuple[str, re.Pattern[str] | None, ExtractKind], ...]
    """(name, pattern or None for a named group of `regex`, kind)."""

    def excluded(self, text: str) -> bool:
        return any(pattern.search(text) for pattern in self.excludes)


@dataclass(frozen=True)
class CompiledKB:
    entries: tuple[Entry, ...]
    signatures: tuple[CompiledSignature, ...]
    exact: tuple[int, ...]
    """Indices of text and regex signatures."""
    fuzzy: tuple[int, ...]
    """Indices of fuzzy signatures."""

    @property
    def fuzzy_templates(self) -> list[str]:
        return [self.signatures[i].fuzzy_template or "" for i in self.fuzzy]


def _compile_signature(index: int, entry_index: int, cause: str | None, sig: Signature) -> CompiledSignature:
    regex: re.Pattern[str] | None = None
    if sig.text is not None:
        regex = re.compile(re.escape(sig.text), re.IGNORECASE)
    elif sig.regex is not None:
        regex = re.compile(sig.regex, re.IGNORECASE)
    extract: list[tuple[str, re.Pattern[str] | None, ExtractKind]] = []
    if regex is not None:
        extract += [(name, None, sig.extract_kind.get(name, "str")) for name in regex.groupindex]
    extract += [
        (name, re.compile(pattern, re.IGNORECASE), sig.extract_kind.get(name, "str"))
        for name, pattern in sig.extract.items()
    ]
    return CompiledSignature(
        index=index,
        entry=entry_index,
        cause=cause,
        kind=sig.kind,
        pattern=sig.pattern,
        weight=sig.weight,
        min_score=sig.min_score,
        regex=regex,
        fuzzy_template=template(sig.fuzzy) if sig.fuzzy is not None else None,
        excludes=tuple(re.compile(p, re.IGNORECASE) for p in sig.exclude),
        extract=tuple(extract),
    )


def compile_kb(kb: KnowledgeBase) -> CompiledKB:
    entries = tuple(sorted(kb.entries.values(), key=lambda e: e.id))
    signatures: list[CompiledSignature] = []
    for entry_index, entry in enumerate(entries):
        for sig in entry.signatures:
            signatures.append(_compile_signature(len(signatures), entry_index, None, sig))
        for cause in entry.causes:
            for sig in cause.evidence:
                signatures.append(_compile_signature(len(signatures), entry_index, cause.id, sig))
    return CompiledKB(
        entries=entries,
        signatures=tuple(signatures),
        exact=tuple(s.index for s in signatures if s.kind != "fuzzy"),
        fuzzy=tuple(s.index for s in signatures if s.kind == "fuzzy"),
    )
