"""Measure the KB on labelled logs: category accuracy, silence, false alarms, causes and fixes.

A labelled directory holds either `labels.yaml` (our samples: file, category, top, healthy, honeypot)
or `cases.yaml` (real excerpts: log_file, category, and for the real corpus split, repo, the cause
and fix terms of what the thread confirmed). Figures are reported per split: a figure on the logs
the rules were written from proves nothing, the blind `test` split is the one to quote.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterable


from triage.engine.compiled import CompiledKB
from triage.engine.prefilter import build_prefilter
from triage.engine.scanner import Scanner
from triage.kbtools.cases import Case, thread_key
from triage.kbtools.baseline import classify_files
from triage.kbtools.validation import HONEYPOT_MAX_CONFIDENCE
from triage.results import Diagnosis, FixResult, ScanResult
from triage.scanning import scan_sources
from triage.sources import SourceError, read_chunks

FALSE_ALARM_CONFIDENCE = 0.5
"""On a healthy log, an error-level diagnosis at this confidence or more is a false alarm."""
FIXES_CHECKED = 2
"""The thread's fix counts as offered when it is among this many first fixes of the top diagnosis."""


@dataclass
class CaseOutcome:
    case: Case
    result: ScanResult
    """The case's whole scan, for checks beyond the figures (which fixes each diagnosis offers)."""
    keyword: str | None = None
    """What the keyword baseline (`baseline.classify_files`) makes of the same log."""

    @property
    def predicted(self) -> list[tuple[str, str, float]]:
        """(entry id, category, confidence) best first."""
        return [(d.id, d.category, d.confidence) for d in self.result.diagnoses]

    @property
    def top(self) -> Diagnosis | None:
        return self.result.diagnoses[0] if self.result.diagnoses else None

    @property
    def failures(self) -> list[tuple[str, float]]:
        """(severity, confidence) of every diagnosis, for the false-alarm rule."""
        return [(d.severity, d.confidence) for d in self.result.diagnoses]

    @property
    def layer(self) -> str:
        """Which layer named the failure: a specific entry, a family rule, the safety net's guess, or none."""
        top = self.top
        if top is None:
            return "none"
        return "guess" if top.guess else "family" if top.family else "entry"

    @property
    def top1(self) -> bool:
        return bool(self.predicted) and self.predicted[0][1] == self.case.category

    @property
    def top3(self) -> bool:
        return any(category == self.case.category for _, category, _ in self.predicted[:3])

    @property
    def silent(self) -> bool:
        """A failure log that got no diagnosis at all."""
        return not self.case.healthy and not self.predicted

    @property
    def false_alarm(self) -> bool:
        if self.case.honeypot:
            return any(confidence >= HONEYPOT_MAX_CONFIDENCE for _, _, confidence in self.predicted)
        return self.case.healthy and any(
            severity in ("critical", "error") and confidence >= FALSE_ALARM_CONFIDENCE
            for severity, confidence in self.failures
        )

    @property
    def cause_right(self) -> bool | None:
        """Whether the top diagnosis's likeliest cause is the thread's (None: no confirmed fix to judge by)."""
        if not self.case.has_confirmed_fix or not self.case.cause_terms:
            return None
        if self.top is None or not self.top1 or not self.top.causes:
            return False
        cause = self.top.causes[0]
        return _mentions(f"{cause.id} {cause.title}", self.case.cause_terms)

    @property
    def fix_offered(self) -> bool | None:
        """Whether the thread's confirmed fix is among the first fixes of the top diagnosis."""
        if not self.case.has_confirmed_fix:
            return None
        if self.top is None or not self.top1:
            return False
        fixes = [fix for fix in self.top.fixes if fix.kind == "fix"][:FIXES_CHECKED]
        return any(_mentions(_fix_text(fix), self.case.fix_terms) for fix in fixes)


def _mentions(text: str, terms: Iterable[str]) -> bool:
    return any(re.search(term, text, re.IGNORECASE) for term in terms)


def _fix_text(fix: FixResult) -> str:
    parts = [fix.title, fix.description, *fix.commands, *(f"{k}={v}" for k, v in fix.env.items())]
    if fix.code is not None:
        parts.append(fix.code.after)
    return "\n".join(parts)


def _ratio(numerator: int, denominator: int) -> float:
    return round(numerator / denominator, 4) if denominator else 0.0


Z_95 = 1.959964
"""The standard normal quantile of a two-sided 95% interval."""


def wilson_interval(successes: int, trials: int) -> list[float]:
    """The 95% Wilson score interval of a rate: how far a figure measured on this many logs may be
    from the rate on logs like them. On 521 logs a top-1 of 65% is 61-69%, so a change of half a
    point between two runs of the same split says little; unlike the normal approximation it stays
    within 0..1 for rates near the ends and small groups."""
    if not trials:
        return [0.0, 0.0]
    rate, z2 = successes / trials, Z_95 * Z_95
    centre = (rate + z2 / (2 * trials)) / (1 + z2 / trials)
    spread = Z_95 * math.sqrt(rate * (1 - rate) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return [round(max(0.0, centre - spread), 4), round(min(1.0, centre + spread), 4)]


def summarize(outcomes: list[CaseOutcome]) -> dict[str, Any]:
    failing = [o for o in outcomes if not o.case.healthy]
    healthy = [o for o in outcomes if o.case.healthy]
    causes = [o.cause_right for o in failing if o.cause_right is not None]
    fixes = [o.fix_offered for o in failing if o.fix_offered is not None]
    counted = {
        "top1": (sum(o.top1 for o in failing), len(failing)),
        "top3": (sum(o.top3 for o in failing), len(failing)),
        "no_diagnosis": (sum(o.silent for o in failing), len(failing)),
        "top_cause_right": (sum(causes), len(causes)),
        "fix_in_first_two": (sum(fixes), len(fixes)),
    }
    return {
        "cases": len(failing),
        "top1": _ratio(sum(o.top1 for o in failing), len(failing)),
        "top3": _ratio(sum(o.top3 for o in failing), len(failing)),
        "no_diagnosis": _ratio(sum(o.silent for o in failing), len(failing)),
        "healthy_logs": len(healthy),
        "false_alarms": sum(o.false_alarm for o in healthy),
        "confirmed_fix_cases": len(fixes),
        "top_cause_right": _ratio(sum(causes), len(causes)),
        "fix_in_first_two": _ratio(sum(fixes), len(fixes)),
        "keyword_top1": _ratio(sum(o.keyword == o.case.category for o in failing), len(failing)),
        "keyword_no_diagnosis": _ratio(sum(o.keyword is None for o in failing), len(failing)),
        "keyword_false_alarms": sum(o.keyword is not None for o in healthy),
        "intervals": {name: wilson_interval(*pair) for name, pair in counted.items()},
    }


@dataclass
class Report:
    outcomes: list[CaseOutcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Labelled logs that could not be read (one line each)."""

    @property
    def labelled(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if not o.case.healthy]

    @property
    def healthy(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if o.case.healthy]

    def splits(self) -> list[str]:
        return sorted({o.case.split for o in self.outcomes if o.case.split})

    def select(self, split: str | None) -> list[CaseOutcome]:
        return [o for o in self.outcomes if split is None or o.case.split == split]

    def summary(self, split: str | None = None) -> dict[str, Any]:
        return summarize(self.select(split))

    def grouped(self, key: str, split: str | None = None) -> dict[str, dict[str, Any]]:
        """Summaries per category, per layer (what named the failure) or per repository of the failure
        logs (and healthy logs per repo)."""
        groups: dict[str, list[CaseOutcome]] = defaultdict(list)
        for outcome in self.select(split):
            if key == "repo":
                groups[outcome.case.repo or "?"].append(outcome)
            elif not outcome.case.healthy:
                groups[(outcome.case.category if key == "category" else outcome.layer) or "?"].append(outcome)
        return {name: summarize(items) for name, items in sorted(groups.items())}

    def by_category(self, split: str | None = None) -> dict[str, dict[str, Any]]:
        return self.grouped("category", split)

    def per_entry(self) -> dict[str, dict[str, float]]:
        """Precision and recall of each entry as the top diagnosis.

        With an expected `top` id the unit is the entry; without one (cases.yaml) a prediction is
        right when its category is.
        """
        predicted: dict[str, int] = defaultdict(int)
        correct: dict[str, int] = defaultdict(int)
        expected: dict[str, int] = defaultdict(int)
        for outcome in self.outcomes:
            top_id = outcome.predicted[0][0] if outcome.predicted else None
            if outcome.case.top:
                expected[outcome.case.top] += 1
            if top_id is None:
                continue
            predicted[top_id] += 1
            if outcome.case.top:
                correct[top_id] += top_id == outcome.case.top
            elif not outcome.case.healthy:
                correct[top_id] += outcome.top1
        out = {}
        for entry_id in sorted(set(predicted) | set(expected)):
            row: dict[str, float] = {
                "predicted": predicted[entry_id],
                "precision": _ratio(correct[entry_id], predicted[entry_id]),
            }
            if expected[entry_id]:
                row["expected"] = expected[entry_id]
                row["recall"] = _ratio(correct[entry_id], expected[entry_id])
            out[entry_id] = row
        return out

    def to_json(self) -> dict[str, Any]:
        splits = self.splits()
        return {
            "summary": self.summary(),
            "splits": {
                split: {
                    "summary": self.summary(split),
                    "by_category": self.by_category(split),
                    "by_repo": self.grouped("repo", split),
                    "by_layer": self.grouped("layer", split),
                }
                for split in splits
            },
            "errors": list(self.errors),
            "by_category": self.by_category(),
            "per_entry": self.per_entry(),
            "cases": [_case_json(o) for o in self.outcomes],
        }


def _case_json(o: CaseOutcome) -> dict[str, Any]:
    return {
        "id": o.case.id or o.case.file.name,
        "file": o.case.file.name,
        "split": o.case.split,
        "repo": o.case.repo,
        "category": o.case.category,
        "expected_top": o.case.top,
        "healthy": o.case.healthy,
        "predicted": [{"id": i, "category": c, "confidence": conf} for i, c, conf in o.predicted[:3]],
        "top1": o.top1 if not o.case.healthy else None,
        "no_diagnosis": o.silent if not o.case.healthy else None,
        "false_alarm": o.false_alarm if o.case.healthy else None,
        "top_cause_right": o.cause_right,
        "fix_in_first_two": o.fix_offered,
        "keyword": o.keyword,
    }


def evaluate(
    kb: CompiledKB, cases: list[Case], *, bury_in: list[Path] | None = None, leave_thread_out: bool = False
) -> Report:
    """Scan every case; with `bury_in` (healthy logs), each failure log is scanned between two of them.

    With `leave_thread_out`, each case is scanned as if the KB had never read its thread: the entries
    that cite it (a reference or a `confirmed_by`) match nothing and lend no neighbour lines. On the
    train split, that is a figure for logs the entries were not written from, without the test split.
    """
    prefilter = build_prefilter(kb)
    citing = entries_citing(kb) if leave_thread_out else {}
    report = Report()
    for case in cases:
        # A corpus case never counts as its own neighbour: the safety net is judged leave-one-out.
        case_kb = _without(kb, f"case:{case.id}", citing.get(thread_key(case.source), ()) if case.source else ())
        scanner = Scanner(case_kb, prefilter=prefilter)
        paths = [case.file]
        if bury_in and not case.healthy:
            before, after = burial(case.id, bury_in)
            paths = [before, case.file, after]
            report.errors += _scan_as_one(scanner, paths, case.file.name)
        else:
            # A labelled log that cannot be read would count as "nothing fired": a silent pass.
            report.errors += scan_sources(scanner, [str(case.file)])
        report.outcomes.append(CaseOutcome(case, scanner.result(), _keyword(paths)))
    return report


def burial(case_id: str, healthy: list[Path]) -> tuple[Path, Path]:
    """The two healthy logs a failure log is buried between: those whose names hash highest with
    the case's id, so that a case keeps its pair when other cases, failing or healthy, join the
    corpus (by position in the list, each addition reshuffled every later case's pair, and the
    buried figures moved by a point and a half with it)."""
    ranked = sorted(healthy, key=lambda path: hashlib.sha256(f"{case_id}:{path.name}".encode()).digest())
    return ranked[-1], ranked[-2 % len(ranked)]


def _keyword(paths: list[Path]) -> str | None:
    try:
        return classify_files(paths)
    except SourceError:
        return None  # the scan reported it already


def entries_citing(kb: CompiledKB) -> dict[str, tuple[int, ...]]:
    """The entries (by index) that cite each thread, as references or as where a fix was confirmed."""
    citing: dict[str, set[int]] = defaultdict(set)
    for index, entry in enumerate(kb.entries):
        urls = [ref.get("url") for ref in entry.references]
        urls += [url for fix in entry.fixes for url in fix.get("confirmed_by") or ()]
        for url in urls:
            if url:
                citing[thread_key(url)].add(index)
    return {thread: tuple(sorted(indices)) for thread, indices in citing.items()}


def _without(kb: CompiledKB, own: str, entries: tuple[int, ...]) -> CompiledKB:
    """The KB without a case's own neighbour lines and, switched off, the given entries: their
    signatures confirm no line (as an overridden entry's, `CompiledSignature.off`) and their
    examples are no neighbours."""
    labels = frozenset([own, *(f"entry:{kb.entries[index].id}" for index in entries)])
    if not entries:
        return kb.without_neighbours(labels)
    off = set(entries)
    signatures = tuple(dataclasses.replace(s, off=True) if s.entry in off else s for s in kb.signatures)
    return kb.without_neighbours(labels, signatures=signatures)


def _scan_as_one(scanner: Scanner, paths: list[Path], name: str) -> list[str]:
    errors = []
    for path in paths:
        try:
            for chunk in read_chunks(str(path)):
                scanner.feed(chunk, name)
        except SourceError as exc:
            errors.append(str(exc))
        scanner.feed(b"\n", name)
    scanner.finish(name)
    return errors
