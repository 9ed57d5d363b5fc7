"""Nearest known failures: which category an unknown error most resembles.

Every example line of the KB and every error line (and traceback frame) of the real corpus's train
split is labelled with its category. An unclaimed error is judged two ways: by the words it shares
with each category's known failures (naive Bayes over documents: a KB entry's examples, or one
corpus log), and by its closest single lines (rapidfuzz over masked templates), which also name
the entries it resembles. Measured leave-one-out on the train split, the word model alone names
the category more often than the closest lines alone, and the two together best. A guess, and
reported as one.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from triage.engine.normalize import template

Neighbour = tuple[str, str, str]
"""(template, category, label): the label is `entry:<id>` or `case:<corpus case id>`, with
FRAMES_SUFFIX for a corpus log's traceback frames (words for the word model, no line of their own)."""
FRAMES_SUFFIX = "#frames"
ReportedCase = tuple[str, str, str, str, str]
"""(label, thread URL, root cause, the fix the thread confirmed or "", the stack its log shows as
`context.stack_text` writes it): what a corpus case's thread said, and of which job."""


def reported_cases(rows: Iterable[Sequence[str]]) -> tuple[ReportedCase, ...]:
    """Rows as a cases file or a KB cache's JSON holds them (lists), as ReportedCase tuples."""
    return tuple((row[0], row[1], row[2], row[3], row[4]) for row in rows)


WRAPPER = "wrapper"
"""The category of a wrapper's example lines (EZ9999, ERR00100): a line closest to one of them is a
wrapper too, and casts no vote."""
HEALTHY = "healthy"
"""The neighbours' label for error-looking lines of logs of runs that worked."""
K = 7
AMBIGUOUS_FAMILIES = 3
"""A line that reported failures of this many families print (a traceback's header, ERR00100, "Inner
Error!", "WorkerProc hit an exception.") tells none of them apart: it is read as a wrapper's line.
Chosen leave-thread-out on the train split: 2 / 3 / never gave top-1 73.8 / 74.2 / 73.3%, top-3
85.1 / 84.9 / 85.3%."""
ALTERNATIVES = 2
"""Categories after the winner that a guess keeps: its top three, as a reader weighs them."""
MIN_SCORE = 55.0
"""Below this a neighbour is no evidence at all (shared boiler-plate words score about 40-50)."""
WORDS_WEIGHT = 0.5
LINES_WEIGHT = 0.5
SMOOTHING = 0.5
PRIOR_WEIGHT = 1.0
"""How much each family's share of the reported failures (the corpus cases among the neighbours)
counts in the vote: how often a family fails at all breaks ties that the lines leave open. Chosen
leave-thread-out on the train split: 0.5 / 1.0 / 1.5 / 2.5 gave top-1 74.2 / 74.9 / 74.7 / 74.2%,
top-3 85.1 / 86.3 / 86.0 / 84.8% (73.9% / 83.9% without)."""
CATCH_ALL = "other"
CATCH_ALL_SHARE = 0.15
"""Added, as this share of the whole vote, to that of failures of no named kind wherever error lines
voted (not a stall's or a degenerate output's family, which its signal decides) and do not read as a
healthy run's: such failures have no words or lines of their own (a framework's bug reads like any
error of its stack), so the vote spreads them thin. Chosen leave-thread-out on the train split: 0 /
0.05 / 0.1 / 0.15 / 0.2 / 0.3 gave top-1 68.6 / 68.5 / 68.6 / 68.7 / 69.1 / 67.2%, top-3 83.8 / 84.5 / 84.7 /
84.8 / 84.8 / 84.6% (at 0.3 the catch-all wins half the guesses)."""
RARE_WORD_FAILURES = 10
"""A word that at most this many known failures (KB entries, reported cases) use is a name, not a
template's word: `'frobcontext' object has no attribute 'num_tokens'` reads like every AttributeError,
and only its rare words say which failure it is."""
_TOKEN = re.compile(r"[a-z][a-z0-9_]{2,}")
_CLASS_WORD = re.compile(r"(?:error|exception|warning|failure|fault|failed)$")
"""The word of an exception's class (`validationerror`) belongs to its template, however rare."""
_STOP = frozenset(
    "the and for with from this that not are was were has have had you your can could should would will "
    "line file none true false self return".split()
)


def tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


@dataclass(frozen=True)
class Guess:
    category: str
    score: float
    """Mean similarity (0-100) of the neighbours that voted for the category (0: words alone)."""
    share: float
    """The category's share of the vote (0-1)."""
    entries: tuple[tuple[str, float], ...]
    """KB entries among the closest neighbours, best first: (entry id, similarity)."""
    others: tuple[tuple[str, float], ...] = ()
    """The next categories (at most ALTERNATIVES) and their shares of the vote, best first."""
    cases: tuple[tuple[str, float], ...] = ()
    """Corpus cases of the winning category among the closest neighbours, best first: (label, similarity)."""


_PLACEHOLDER = re.compile(r"<[a-z]+>|[^\w\s]")
_EXCEPTION_NAME = re.compile(r"^\s*[\w.]*(?:error|exception|failed|failure|fault)\b", re.IGNORECASE)


def informative(masked: str) -> bool:
    """Whether a template says more than an exception name: `runtimeerror:` alone resembles every
    RuntimeError, and token-set similarity would rate it a perfect match for all of them."""
    words = _PLACEHOLDER.sub(" ", _EXCEPTION_NAME.sub("", masked)).split()
    return len(words) >= 2 and sum(len(word) for word in words) >= 10


QUERY_CHARS = 2000
"""Of a message's template, what is compared with the known lines (a few hundred characters each): a 16 KB
message took 0.1 s a comparison."""
SET_WEIGHT = 0.7
RATIO_WEIGHT = 0.3
"""A neighbour's similarity: 0.7 token-set similarity + 0.3 plain ratio. Token-set similarity forgives
extra words on either side (prefixes, paths) but rates a short query inside a long line at 100;
the plain ratio keeps such pairs honest."""
SET_FLOOR = (MIN_SCORE - RATIO_WEIGHT * 100.0) / SET_WEIGHT - 1.0
"""Below this token-set similarity a template cannot reach MIN_SCORE whatever its ratio."""


class NeighbourIndex:
    def __init__(self, neighbours: tuple[Neighbour, ...], cases: tuple[ReportedCase, ...] = ()) -> None:
        lines = tuple(n for n in neighbours if not n[2].endswith(FRAMES_SUFFIX))
        self._set(neighbours, lines, _failure_families(lines), {case[0]: case for case in cases})

    def _set(
        self,
        documents: tuple[Neighbour, ...],
        lines: tuple[Neighbour, ...],
        families: dict[str, Counter[str]],
        cases: dict[str, ReportedCase],
        relabelled: tuple[Neighbour, ...] | None = None,
    ) -> None:
        self._documents = documents
        self._lines = lines
        self._families = families
        self._neighbours = relabelled if relabelled is not None else _ambiguous_as_wrappers(lines, families)
        self._templates = [n[0] for n in self._neighbours]
        self._cases = cases

    @property
    def documents(self) -> tuple[Neighbour, ...]:
        """Every row the index was made of, traceback frames included."""
        return self._documents

    def reported(self, label: str) -> ReportedCase | None:
        """What the thread of a corpus case (`case:<id>`) said, where the KB has it."""
        return self._cases.get(label)

    def __len__(self) -> int:
        return len(self._neighbours)

    def rare_words_shared(self, label: str, message: str) -> set[str]:
        """The rare words (see RARE_WORD_FAILURES) that an error message shares with the lines of a
        known failure (`case:<id>`, `entry:<id>`): names it and that failure both print, beyond the
        words of an exception's template."""
        counts, _, _ = self._word_model
        words = {
            word
            for word in tokens(template(message))
            if not _CLASS_WORD.search(word) and sum(seen[word] for seen in counts.values()) <= RARE_WORD_FAILURES
        }
        if not words:
            return set()
        return words & self._words_of(label)

    def names(self, label: str, name: str) -> bool:
        """Whether the lines of a known failure (`case:<id>`, `entry:<id>`) hold every word of `name`;
        not the placeholder of what the template masks (any two paths read `<path>`)."""
        wanted = tokens(_PLACEHOLDER.sub(" ", template(name)))
        return bool(wanted) and wanted <= self._words_of(label)

    def _words_of(self, label: str) -> set[str]:
        """The words of a known failure's document (its lines, with a corpus log's frames)."""
        own = _documents(row for row in self._documents if row[2].removesuffix(FRAMES_SUFFIX) == label)
        return own[label][1] if label in own else set()

    def without(self, labels: frozenset[str]) -> NeighbourIndex:
        """The index less the documents of these labels (`case:<id>`, `entry:<id>`): the evaluation
        drops a case's own lines for each case, so the word model is taken from this one's, less
        their words, instead of counted again."""
        gone = [n for n in self._documents if n[2].removesuffix(FRAMES_SUFFIX) in labels]
        if not gone:
            return self
        kept = tuple(n for n in self._documents if n[2].removesuffix(FRAMES_SUFFIX) not in labels)
        # Only the lines the dropped documents print can change their wrapper reading: the others
        # keep this index's, without counting every line's families again.
        families = dict(self._families)
        changed = _failure_families(n for n in gone if not n[2].endswith(FRAMES_SUFFIX))
        for masked, gone_families in changed.items():
            families[masked] = families[masked] - gone_families
        kept_lines = [(line, n) for line, n in zip(self._lines, self._neighbours) if line[2] not in labels]
        relabelled = tuple(_as_wrapper(line, families) if line[0] in changed else n for line, n in kept_lines)
        index = NeighbourIndex.__new__(NeighbourIndex)
        index._set(kept, tuple(line for line, _ in kept_lines), families, self._cases, relabelled)
        counts, _, _ = self._word_model
        less = dict(counts)  # only the families of the dropped documents are copied and counted down
        for category, words in _documents(gone).values():
            if less[category] is counts[category]:
                less[category] = Counter(counts[category])
            less[category].subtract(words)
            for word in words:
                if less[category][word] <= 0:
                    del less[category][word]  # a word no document has is no word of the family
        # In the order a fresh count would make (the vote's sums follow it).
        order = dict.fromkeys(category for _, category, _ in kept if category != WRAPPER)
        model = {category: less[category] for category in order}
        vars(index)["_word_model"] = _word_model_of(model)  # seeds the cached_property
        return index

    def word_counts(self) -> dict[str, dict[str, int]]:
        """The word model's counts (per category, in how many documents each word appears): what a KB
        cache keeps, so that a scan's first guess need not read every document's words again."""
        counts, _, _ = self._word_model
        return {category: dict(seen) for category, seen in counts.items()}

    def seed_word_counts(self, counts: dict[str, dict[str, int]]) -> None:
        """Take the word model's counts from a cache (see `word_counts`) instead of counting them."""
        vars(self)["_word_model"] = _word_model_of({category: Counter(seen) for category, seen in counts.items()})

    @cached_property
    def _word_model(self) -> tuple[dict[str, Counter[str]], dict[str, int], int]:
        """Per category: in how many documents each word appears, and the total; the vocabulary size."""
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for category, words in _documents(self._documents).values():
            counts[category].update(words)
        return _word_model_of(dict(counts))

    @cached_property
    def _prior(self) -> dict[str, float]:
        """Each family's share of the reported failures among the neighbours (one per corpus case)."""
        cases = {
            label.removesuffix(FRAMES_SUFFIX): category
            for _, category, label in self._documents
            if _reported_failure(category, label)
        }
        counts = Counter(cases.values())
        total = sum(counts.values())
        return {category: count / total for category, count in counts.items()} if total else {}

    def _word_votes(self, words: set[str]) -> dict[str, float]:
        """Posterior of each category given the words (naive Bayes, uniform prior)."""
        counts, totals, vocabulary = self._word_model
        known = {w for w in words if any(w in c for c in counts.values())}
        if not known:
            return {}
        logs = {
            category: sum(math.log((seen[w] + SMOOTHING) / (totals[category] + SMOOTHING * vocabulary)) for w in known)
            for category, seen in counts.items()
        }
        top = max(logs.values())
        weights = {category: math.exp(value - top) for category, value in logs.items()}
        total = sum(weights.values())
        return {category: weight / total for category, weight in weights.items()}

    def _closest(self, query: str) -> list[tuple[float, int]]:
        """The K templates most similar to the query, (similarity, position), best first (ties: the
        earlier template). Each measure is computed over the templates in C: a Python scorer called
        once per template cost the guess most of its time."""
        # rapidfuzz is imported at the first guess (25 ms): most scans make none.
        from rapidfuzz import fuzz, process

        query = query[:QUERY_CHARS]
        near = process.extract(query, self._templates, scorer=fuzz.token_set_ratio, limit=None, score_cutoff=SET_FLOOR)
        if not near:
            return []
        ratios = process.extract(query, [self._templates[at] for _, _, at in near], scorer=fuzz.ratio, limit=None)
        ratio_of = {near[n][2]: ratio for _, ratio, n in ratios}
        scored = [(SET_WEIGHT * similar + RATIO_WEIGHT * ratio_of[at], at) for _, similar, at in near]
        return sorted((item for item in scored if item[0] >= MIN_SCORE), key=lambda item: (-item[0], item[1]))[:K]

    def guess(
        self,
        messages: list[tuple[str, float]],
        words: dict[str, float] | None = None,
        frames: str = "",
        *,
        catch_all: bool = False,
    ) -> Guess | None:
        """Vote over the categories for these (message, weight): the word model, the closest lines,
        and `words` votes (see `hints`), with failures of no named kind given their share of it
        (`catch_all`, see CATCH_ALL_SHARE); None when nothing points anywhere."""
        votes: dict[str, float] = defaultdict(float, words or {})
        similarity: dict[str, list[float]] = defaultdict(list)
        entries: dict[str, float] = {}
        cases: dict[tuple[str, str], float] = {}
        lines: dict[str, float] = defaultdict(float)
        vocabulary: set[str] = tokens(frames)
        wrappers = 0
        for message, weight in messages:
            query = template(message)
            if not informative(query):
                continue
            found = self._closest(query)
            if found and self._neighbours[found[0][1]][1] == WRAPPER:
                wrappers += 1
                continue
            vocabulary |= tokens(query)
            for score, position in found:
                _, category, label = self._neighbours[position]
                if category == WRAPPER:
                    continue
                lines[category] += weight * ((score - MIN_SCORE) / (100.0 - MIN_SCORE)) ** 2
                similarity[category].append(score)
                if label.startswith("entry:"):
                    entry = label[len("entry:") :]
                    entries[entry] = max(entries.get(entry, 0.0), score)
                else:
                    cases[label, category] = max(cases.get((label, category), 0.0), score)
        total_lines = sum(lines.values())
        for category, vote in lines.items() if total_lines > 0 else ():  # each at MIN_SCORE exactly: no vote
            votes[category] += LINES_WEIGHT * vote / total_lines
        for category, vote in self._word_votes(vocabulary).items():
            votes[category] += WORDS_WEIGHT * vote
        # Lines that all read as wrappers say nothing of a failure, and a stall has no lines.
        if len(messages) > wrappers:
            for category, share in self._prior.items():
                votes[category] += PRIOR_WEIGHT * share
        votes = {category: vote for category, vote in votes.items() if vote > 0}
        if not votes:
            return None
        if catch_all and len(messages) > wrappers and max(votes, key=lambda c: votes[c]) != HEALTHY:
            votes[CATCH_ALL] = votes.get(CATCH_ALL, 0.0) + CATCH_ALL_SHARE * sum(votes.values())
        return _guess_of(votes, similarity, entries, cases)


def _guess_of(
    votes: dict[str, float],
    similarity: dict[str, list[float]],
    entries: dict[str, float],
    cases: dict[tuple[str, str], float],
) -> Guess:
    """The guess the vote makes: its winner, with the neighbours that voted for it and the runners-up."""
    ranked = sorted(votes, key=lambda c: -votes[c])
    category, total = ranked[0], sum(votes.values())
    scores = similarity.get(category, [])
    return Guess(
        category=category,
        score=round(sum(scores) / len(scores), 1) if scores else 0.0,
        share=round(votes[category] / total, 3),
        entries=tuple(sorted(entries.items(), key=lambda item: -item[1])[:3]),
        others=tuple((other, round(votes[other] / total, 3)) for other in ranked[1 : 1 + ALTERNATIVES]),
        cases=_of_category(cases, category),
    )


def _reported_failure(category: str, label: str) -> bool:
    """Whether a row comes from a corpus case of a failure (not a KB example, a wrapper's line or a
    healthy run's)."""
    return label.startswith("case:") and category not in (WRAPPER, HEALTHY)


def _failure_families(lines: Iterable[Neighbour]) -> dict[str, Counter[str]]:
    """Per line text, how many lines of reported failures of each family print it."""
    families: dict[str, Counter[str]] = defaultdict(Counter)
    for masked, category, label in lines:
        if _reported_failure(category, label):
            families[masked][category] += 1
    return dict(families)


def _ambiguous_as_wrappers(lines: tuple[Neighbour, ...], families: dict[str, Counter[str]]) -> tuple[Neighbour, ...]:
    """The lines with those that reported failures of AMBIGUOUS_FAMILIES families or more print
    relabelled as wrappers' lines: a message closest to one says nothing of its family."""
    return tuple(_as_wrapper(line, families) for line in lines)


def _as_wrapper(line: Neighbour, families: dict[str, Counter[str]]) -> Neighbour:
    masked, category, label = line
    return (masked, WRAPPER, label) if len(families.get(masked, ())) >= AMBIGUOUS_FAMILIES else line


def _documents(rows: Iterable[Neighbour]) -> dict[str, tuple[str, set[str]]]:
    """The word model's documents: (category, words) by label (a KB entry's examples, or one corpus
    log with its traceback frames); wrappers' lines are none."""
    documents: dict[str, tuple[str, set[str]]] = {}
    for masked, category, label in rows:
        if category != WRAPPER:
            documents.setdefault(label.removesuffix(FRAMES_SUFFIX), (category, set()))[1].update(tokens(masked))
    return documents


def _word_model_of(counts: dict[str, Counter[str]]) -> tuple[dict[str, Counter[str]], dict[str, int], int]:
    vocabulary = len(set().union(*counts.values())) if counts else 0
    return counts, {c: sum(n.values()) for c, n in counts.items()}, vocabulary


def _of_category(cases: dict[tuple[str, str], float], category: str) -> tuple[tuple[str, float], ...]:
    """The corpus cases (label, similarity) of a category among the closest lines, best first."""
    ranked = sorted(cases.items(), key=lambda item: -item[1])
    return tuple((label, score) for (label, of), score in ranked if of == category)[:3]
