"""Fold live probe results into a scan: confirmed causes rise, ruled-out ones fall.

Probe results arrive as the probes' JSON objects (see probes/README.md), so this module needs
neither torch nor the probe runner.
"""

from __future__ import annotations

from typing import Any

from triage.engine.correlate import role_order
from triage.engine.rank import confidence_of, sort_key
from triage.results import CauseResult, Diagnosis, ScanResult, replace

CONFIRM_FACTOR = 4.0
RULE_OUT_FACTOR = 0.15
CONFIRM_SCORE_BONUS = 1.0
ALL_RULED_OUT_DAMPING = 0.4


def _verdicts(probe_results: list[dict[str, Any]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """cause id -> notes of the findings that confirm it, and of those that rule it out."""
    confirms: dict[str, list[str]] = {}
    rules_out: dict[str, list[str]] = {}
    for result in probe_results:
        probe = str(result.get("probe", "probe"))
        for finding in result.get("findings") or []:
            if not isinstance(finding, dict):
                continue
            note = f"{probe}: {finding.get('message', finding.get('id', ''))}"
            for cause_id in finding.get("confirms") or []:
                confirms.setdefault(str(cause_id), []).append(note)
            for cause_id in finding.get("rules_out") or []:
                rules_out.setdefault(str(cause_id), []).append(note)
    return confirms, rules_out


def _reweigh(diagnosis: Diagnosis, confirms: dict[str, list[str]], rules_out: dict[str, list[str]]) -> Diagnosis:
    if not diagnosis.causes:
        return diagnosis
    weights = []
    notes: list[str] = []
    causes: list[CauseResult] = []
    for cause in diagnosis.causes:
        weight = cause.probability
        extra: list[str] = []
        if cause.id in confirms:
            weight *= CONFIRM_FACTOR
            extra += [f"confirmed by {note}" for note in confirms[cause.id]]
        if cause.id in rules_out:
            weight *= RULE_OUT_FACTOR
            extra += [f"ruled out by {note}" for note in rules_out[cause.id]]
        weights.append(weight)
        notes += [f"{cause.id}: {note}" for note in extra]
        causes.append(replace(cause, evidence=cause.evidence + extra))
    total = sum(weights) or 1.0
    causes = [replace(c, probability=round(w / total, 3)) for c, w in zip(causes, weights)]
    causes.sort(key=lambda c: -c.probability)
    score = diagnosis.score
    if any(cause.id in confirms for cause in diagnosis.causes):
        score += CONFIRM_SCORE_BONUS
    elif all(cause.id in rules_out for cause in diagnosis.causes):
        score *= ALL_RULED_OUT_DAMPING
    return replace(
        diagnosis,
        causes=causes,
        score=round(score, 3),
        confidence=round(confidence_of(score), 3) if score != diagnosis.score else diagnosis.confidence,
        probe_notes=diagnosis.probe_notes + notes,
    )



def apply_probe_results(result: ScanResult, probe_results: list[dict[str, Any]]) -> ScanResult:
    """A new ScanResult re-ranked by what the probes found; `probe_notes` say what changed what."""
    confirms, rules_out = _verdicts(probe_results)
    diagnoses = role_order(sorted((_reweigh(d, confirms, rules_out) for d in result.diagnoses), key=sort_key))
    return replace(result, diagnoses=diagnoses, probes=list(probe_results))
