"""Match one decoded line against the KB: exact signatures confirmed with `re`, fuzzy ones with
rapidfuzz once per distinct line template."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from triage.engine.compiled import CompiledKB, CompiledSignature
from triage.engine.confirm import confirm
from triage.engine.normalize import template
from triage.engine.values import parse_value

FUZZY_CACHE_LIMIT = 20_000
"""Fuzzy verdicts remembered, by line template: bounded so that millions of distinct error lines keep
memory flat (real logs have hundreds of templates; a verdict is cheap to compute again)."""
FUZZY_MIN_LENGTH_RATIO = 0.7
"""A line much shorter than a fuzzy signature would 'contain' it by partial ratio; such lines don't count."""


@dataclass(frozen=True)
class Hit:
    signature: CompiledSignature
    quality: float
    match: re.Match[str] | None


class LineMatcher:
    def __init__(self, kb: CompiledKB) -> None:
        self.kb = kb
        self._fuzzy_cache: dict[str, tuple[tuple[int, float], ...]] = {}
        self._fuzzy_choices = kb.fuzzy_templates
        self._fuzzy_cutoff = min((kb.signatures[i].min_score for i in kb.fuzzy), default=100.0)
        self._exact = frozenset(kb.exact)

    @property
    def templates(self) -> int:
        """How many distinct line templates the fuzzy matcher has judged (and remembers)."""
        return len(self._fuzzy_cache)

    def exact(self, text: str, ids: set[int] | frozenset[int] | None) -> list[Hit]:
        indices = self._exact if ids is None else (ids & self._exact)
        hits = []
        for index in indices:
            signature = self.kb.signatures[index]
            match = confirm(signature, text)
            if match is not None:
                hits.append(Hit(signature, 1.0, match))
        return hits

    def fuzzy(self, text: str) -> list[Hit]:
        if not self._fuzzy_choices:
            return []
        line_template = template(text)
        verdict = self._fuzzy_cache.get(line_template)
        if verdict is None:
            verdict = self._fuzzy_verdict(line_template)
            if len(self._fuzzy_cache) >= FUZZY_CACHE_LIMIT:
                self._fuzzy_cache.clear()
            self._fuzzy_cache[line_template] = verdict
        return [
            Hit(self.kb.signatures[index], score / 100.0, None)
            for index, score in verdict
            if not self.kb.signatures[index].excluded(text)
        ]

    def _fuzzy_verdict(self, line_template: str) -> tuple[tuple[int, float], ...]:
        # Imported at the first fuzzy match (25 ms): a log without a candidate error line needs none.
        from rapidfuzz import fuzz, process

        found = process.extract(
            line_template,
            self._fuzzy_choices,
            scorer=fuzz.partial_ratio,
            score_cutoff=self._fuzzy_cutoff,
            limit=None,
        )
        verdict = []
        for choice, score, position in found:
            index = self.kb.fuzzy[position]
            if score >= self.kb.signatures[index].min_score and len(line_template) >= FUZZY_MIN_LENGTH_RATIO * len(
                choice
            ):
                verdict.append((index, float(score)))
        return tuple(verdict)


def extract(signature: CompiledSignature, text: str, match: re.Match[str] | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, pattern, kind in signature.extract:
        if pattern is None:
            raw = match.group(name) if match is not None else None
        else:
            found = pattern.search(text)
            raw = found.group(1) if found else None
        if raw is not None:
            value = parse_value(raw, kind)
            if value is not None:
                values[name] = value
    return values
