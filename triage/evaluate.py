"""Measure the KB on labelled logs: top-1/top-3 category accuracy, false alarms, per-entry precision/recall.

A labelled directory holds either `labels.yaml` (our samples: file, category, top, healthy, honeypot)
or `cases.yaml` (real excerpts: log_file, category).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from triage.engine.compiled import CompiledKB
from triage.engine.prefilter import build_prefilter
from triage.engine.scanner import Scanner
from triage.kb.validate import HONEYPOT_MAX_CONFIDENCE
from triage.scanning import scan_sources


class LabelError(Exception):
    """The labels file is missing or malformed; str() is one line."""


@dataclass(frozen=True)
class Case:
    file: Path
    category: str | None
    top: str | None = None
    healthy: bool = False
    honeypot: bool = False


@dataclass
class CaseOutcome:
    case: Case
    predicted: list[tuple[str, str, float]]
    """(entry id, category, confidence) best first."""

    @property
    def top1(self) -> bool:
        return bool(self.predicted) and self.predicted[0][1] == self.case.category

    @property
    def top3(self) -> bool:
        return any(category == self.case.category for _, category, _ in self.predicted[:3])

    @property
    def false_alarm(self) -> bool:
        if self.case.honeypot:
            return any(confidence >= HONEYPOT_MAX_CONFIDENCE for _, _, confidence in self.predicted)
        return self.case.healthy and bool(self.predicted)


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

    def by_category(self) -> dict[str, dict[str, float]]:
        groups: dict[str, list[CaseOutcome]] = defaultdict(list)
        for outcome in self.labelled:
            groups[outcome.case.category or "?"].append(outcome)
        return {
            category: {
                "cases": len(items),
                "top1": _ratio(sum(o.top1 for o in items), len(items)),
                "top3": _ratio(sum(o.top3 for o in items), len(items)),
            }
            for category, items in sorted(groups.items())
        }

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
            row: dict[str, float] = {"predicted": predicted[entry_id], "precision": _ratio(correct[entry_id], predicted[entry_id])}
            if expected[entry_id]:
                row["expected"] = expected[entry_id]
                row["recall"] = _ratio(correct[entry_id], expected[entry_id])
            out[entry_id] = row
        return out

    def summary(self) -> dict[str, Any]:
        labelled = self.labelled
        return {
            "cases": len(labelled),
            "top1": _ratio(sum(o.top1 for o in labelled), len(labelled)),
            "top3": _ratio(sum(o.top3 for o in labelled), len(labelled)),
            "healthy_logs": len(self.healthy),
            "false_alarms": sum(o.false_alarm for o in self.healthy),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "errors": list(self.errors),
            "by_category": self.by_category(),
            "per_entry": self.per_entry(),
            "cases": [
                {
                    "file": o.case.file.name,
                    "category": o.case.category,
                    "expected_top": o.case.top,
                    "healthy": o.case.healthy,
                    "predicted": [{"id": i, "category": c, "confidence": conf} for i, c, conf in o.predicted[:3]],
                    "top1": o.top1 if not o.case.healthy else None,
                    "false_alarm": o.false_alarm if o.case.healthy else None,
                }
                for o in self.outcomes
            ],
        }


def _ratio(numerator: int, denominator: int) -> float:
    return round(numerator / denominator, 4) if denominator else 0.0


def load_cases(directory: Path) -> list[Case]:
    for name in ("labels.yaml", "cases.yaml"):
        path = directory / name
        if path.is_file():
            break
    else:
        raise LabelError(f"{directory}: no labels.yaml or cases.yaml")
    try:
        rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LabelError(f"{path}: cannot read labels: {exc}") from None
    if not isinstance(rows, list):
        raise LabelError(f"{path}: expected a list of cases")
    cases = []
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not (row.get("file") or row.get("log_file")):
            raise LabelError(f"{path}: case {number} has no file/log_file")
        cases.append(
            Case(
                file=directory / str(row.get("file") or row.get("log_file")),
                category=row.get("category"),
                top=row.get("top"),
                healthy=bool(row.get("healthy", False)),
                honeypot=bool(row.get("honeypot", False)),
            )
        )
    return cases


def evaluate(kb: CompiledKB, cases: list[Case]) -> Report:
    prefilter = build_prefilter(kb)
    report = Report()
    for case in cases:
        scanner = Scanner(kb, prefilter=prefilter)
        # A labelled log that cannot be read would count as "nothing fired": a silent pass.
        report.errors += scan_sources(scanner, [str(case.file)])
        predicted = [(d.id, d.category, d.confidence) for d in scanner.result().diagnoses]
        report.outcomes.append(CaseOutcome(case, predicted))
    return report
