"""Turn accumulated evidence into ranked diagnoses: pure functions, no I/O."""

from __future__ import annotations

import math
from typing import Any

from triage.engine.compiled import CompiledKB, EntryCard
from triage.engine.evidence import EntryEvidence
from triage.results import CauseResult, Diagnosis, FixResult, ReferenceResult, ScanResult

GENERIC_DAMPING = 0.3
"""A generic wrapper (ERR00100, EZ9999, ...) counts this much when a specific cause was also found."""
GENERIC_MAX_CONFIDENCE = 0.6
DRAFT_DAMPING = 0.5
"""A `draft` entry (TODOs left from `triage kb new`) counts this much: curated entries rank first."""
CAUSE_SUPPORT_BONUS = 0.3
SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "info": 3}
CONFIDENCE_RATE = 1.2


def confidence_of(score: float) -> float:
    """Map an open-ended evidence score to (0, 1): one solid exact signature gives about 0.7."""
    return 1.0 - math.exp(-CONFIDENCE_RATE * max(score, 0.0))


def _signature_score(kb: CompiledKB, qualities: dict[int, float]) -> float:
    return sum(kb.signatures[index].weight * quality for index, quality in qualities.items())


Comparison = tuple[str, str, "str | float", float]


def _condition_holds(condition: Comparison, values: dict[str, Any]) -> bool:
    left_name, op, right_ref, factor = condition
    left = values.get(left_name)
    right = values.get(right_ref) if isinstance(right_ref, str) else right_ref
    if not isinstance(left, (int, float)) or not isinstance(right, (int, float)):
        return False
    right = right * factor
    return {
        ">": left > right,
        ">=": left >= right,
        "<": left < right,
        "<=": left <= right,
    }[op]


def rank_causes(kb: CompiledKB, entry: EntryCard, evidence: EntryEvidence) -> list[CauseResult]:
    """Posterior probability of each cause: prior, raised by its evidence lines and conditions."""
    if not entry.causes:
        return []
    logits = []
    reasons: list[list[str]] = []
    for cause in entry.causes:
        support = _signature_score(kb, evidence.cause_quality.get(cause.id, {}))
        held = [c for c in cause.conditions if _condition_holds(c, evidence.extracted)]
        why = [f"matched: {kb.signatures[i].pattern}" for i in evidence.cause_quality.get(cause.id, {})]
        why += [f"{left} {op} {factor:g} x {right}" for left, op, right, factor in held]
        logits.append(math.log(cause.prior) + 1.5 * support + 1.5 * len(held))
        reasons.append(why)
    top = max(logits)
    weights = [math.exp(logit - top) for logit in logits]
    total = sum(weights)
    causes = [
        CauseResult(
            id=cause.id,
            title=cause.title,
            probability=round(weight / total, 3),
            how_to_tell=cause.how_to_tell,
            evidence=why,
        )
        for cause, weight, why in zip(entry.causes, weights, reasons)
    ]
    return sorted(causes, key=lambda c: -c.probability)


def _fixes(entry: EntryCard, causes: list[CauseResult]) -> list[FixResult]:
    probability = {cause.id: cause.probability for cause in causes}

    def relevance(addresses: list[str]) -> float:
        return max((probability.get(cause_id, 0.0) for cause_id in addresses), default=0.5)

    ordered = sorted(entry.fixes, key=lambda fix: -relevance(fix.get("addresses", [])))
    return [FixResult.from_json(fix) for fix in ordered]


def diagnose(kb: CompiledKB, entry: EntryCard, evidence: EntryEvidence, *, damp_generic: bool) -> Diagnosis:
    score = _signature_score(kb, evidence.signature_quality)
    if evidence.count > 1:
        score += min(0.3, 0.05 * math.log2(evidence.count))
    cause_support = max((_signature_score(kb, q) for q in evidence.cause_quality.values()), default=0.0)
    score += CAUSE_SUPPORT_BONUS * min(1.0, cause_support)
    if entry.generic and damp_generic:
        score *= GENERIC_DAMPING
    if entry.status == "draft":
        score *= DRAFT_DAMPING
    confidence = confidence_of(score)
    if entry.generic:
        confidence = min(confidence, GENERIC_MAX_CONFIDENCE)
    causes = rank_causes(kb, entry, evidence)
    return Diagnosis(
        id=entry.id,
        category=entry.category,
        title=entry.title,
        severity=entry.severity,
        confidence=round(confidence, 3),
        score=round(score, 3),
        summary=entry.summary,
        generic=entry.generic,
        evidence=list(evidence.lines),
        evidence_count=evidence.count,
        causes=causes,
        fixes=_fixes(entry, causes),
        probes=list(entry.probes),
        extracted=dict(evidence.extracted),
        references=[ReferenceResult(**ref) for ref in entry.references],
        rank=evidence.first_rank,
        first_seen=evidence.first_seen or 0,
    )


def sort_key(diagnosis: Diagnosis) -> tuple[float, int, int]:
    return (-diagnosis.score, SEVERITY_ORDER.get(diagnosis.severity, 9), diagnosis.first_seen)


def build_result(
    kb: CompiledKB,
    evidence: dict[int, EntryEvidence],
    *,
    top: int | None = None,
    min_confidence: float = 0.0,
) -> ScanResult:
    fired = {index: ev for index, ev in evidence.items() if ev.fired}
    specific_found = any(not kb.entries[index].generic for index in fired)
    diagnoses = [diagnose(kb, kb.entries[index], ev, damp_generic=specific_found) for index, ev in fired.items()]
    diagnoses = sorted((d for d in diagnoses if d.confidence >= min_confidence), key=sort_key)
    return ScanResult(diagnoses=diagnoses[:top] if top else diagnoses)
