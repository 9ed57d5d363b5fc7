"""Nearest known failures: which category an unknown error line most resembles.

Every example line of the KB and every error line of the real corpus's train split is a labelled
neighbour. An unclaimed error is compared with all of them (rapidfuzz over masked templates) and
the categories of its closest neighbours vote. This is a guess, and is reported as one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from triage.engine.normalize import template

Neighbour = tuple[str, str, str]
"""(template, category, label): the label is `entry:<id>` or `case:<corpus case id>`."""

WRAPPER = "wrapper"
"""The category of a wrapper's example lines (EZ9999, ERR00100): a line closest to one of them is a
wrapper too, and casts no vote."""
K = 7
MIN_SCORE = 55.0
"""Below this a neighbour is no evidence at all (shared boiler-plate words score about 40-50)."""


@dataclass(frozen=True)
class Guess:
    category: str
    score: float
    """Mean similarity (0-100) of the neighbours that voted for the category (0: words alone)."""
    share: float
    """The category's share of the vote (0-1)."""
    entries: tuple[tuple[str, float], ...]
    """KB entries among the closest neighbours, best first: (entry id, similarity)."""


_PLACEHOLDER = re.compile(r"<[a-z]+>|[^\w\s]")
_EXCEPTION_NAME = re.compile(r"^\s*[\w.]*(?:error|exception|failed|failure|fault)\b", re.IGNORECASE)


def informative(masked: str) -> bool:
    """Whether a template says more than an exception name: `runtimeerror:` alone resembles every
    RuntimeError, and token-set similarity would rate it a perfect match for all of them."""
    words = _PLACEHOLDER.sub(" ", _EXCEPTION_NAME.sub("", masked)).split()
    return len(words) >= 2 and sum(len(word) for word in words) >= 10


def _scorer(query: str, choice: str, **kwargs: object) -> float:
    # token_set_ratio forgives extra words on either side (prefixes, paths) but rates a short
    # query inside a long line at 100; the plain ratio keeps such pairs honest.
    return 0.7 * fuzz.token_set_ratio(query, choice) + 0.3 * fuzz.ratio(query, choice)


class NeighbourIndex:
    def __init__(self, neighbours: tuple[Neighbour, ...]) -> None:
        self._neighbours = neighbours
        self._templates = [n[0] for n in neighbours]

    def __len__(self) -> int:
        return len(self._neighbours)

    def guess(self, messages: list[tuple[str, float]], words: dict[str, float] | None = None) -> Guess | None:
        """Vote over the neighbours of each (message, weight), plus `words` votes (see `hints`);
        None when nothing is close enough and no word points anywhere."""
        votes: dict[str, float] = defaultdict(float, words or {})
        similarity: dict[str, list[float]] = defaultdict(list)
        entries: dict[str, float] = {}
        for message, weight in messages:
            query = template(message)
            if not informative(query):
                continue
            found = process.extract(query, self._templates, scorer=_scorer, limit=K, score_cutoff=MIN_SCORE)
            if found and self._neighbours[found[0][2]][1] == WRAPPER:
                continue
            for _, score, position in found:
                _, category, label = self._neighbours[position]
                if category == WRAPPER:
                    continue
                votes[category] += weight * ((score - MIN_SCORE) / (100.0 - MIN_SCORE)) ** 2
                similarity[category].append(score)
                if label.startswith("entry:"):
                    entry = label[len("entry:") :]
                    entries[entry] = max(entries.get(entry, 0.0), score)
        votes = {category: vote for category, vote in votes.items() if vote > 0}
        if not votes:
            return None
        category = max(votes, key=lambda c: votes[c])
        scores = similarity.get(category, [])
        return Guess(
            category=category,
            score=round(sum(scores) / len(scores), 1) if scores else 0.0,
            share=round(votes[category] / sum(votes.values()), 3),
            entries=tuple(sorted(entries.items(), key=lambda item: -item[1])[:3]),
        )
