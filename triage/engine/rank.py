"""Turn accumulated evidence into ranked diagnoses: pure functions, no I/O."""

from __future__ import annotations

import math
from typing import Any

from triage.engine.advice import order_fixes
from triage.engine.compiled import CompiledKB, EntryCard
from triage.engine.context import JobContext
from triage.engine.correlate import FAILURE_SEVERITIES
from triage.engine.culprit import culprit_advice
from triage.engine.evidence import EntryEvidence
from triage.engine.named import named_failure
from triage.engine.safety_net import diagnose_unclaimed, second_opinion
from triage.engine.stalls import stalled_on
from triage.engine.suggested import suggested_fixes
from triage.engine.unclaimed import UnclaimedErrors
from triage.results import CauseResult, Diagnosis, EvidenceLine, ReferenceResult, ScanResult

GENERIC_DAMPING = 0.3
"""A generic wrapper (ERR00100, EZ9999, ...) counts this much when a specific cause was also found."""
GENERIC_MAX_CONFIDENCE = 0.6
STATUS_DAMPING = {"draft": 0.5, "experimental": 0.8}
"""Unfinished entries (drafts from `kb new`) and unproven ones rank below curated (`test`, `stable`) ones."""
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


CONTEXT_WEIGHT = 1.5
"""How much a cause's `likely_when` moves its logit when the log shows (or rules out) that context."""
FAMILY_DAMPING = 0.5
"""A family rule counts this much when a specific entry also fired: the specific one knows more."""
FAMILY_MAX_CONFIDENCE = 0.85


def _support(kb: CompiledKB, qualities: dict[int, float], *, against: bool) -> float:
    return _signature_score(kb, {i: q for i, q in qualities.items() if kb.signatures[i].against == against})


def rank_causes(kb: CompiledKB, entry: EntryCard, evidence: EntryEvidence, context: JobContext) -> list[CauseResult]:
    """Posterior probability of each cause: prior, moved by its evidence lines (for and against),
    its conditions on extracted values, and the job context it is likely in."""
    if not entry.causes:
        return []
    logits = []
    reasons: list[list[str]] = []
    for cause in entry.causes:
        qualities = evidence.cause_quality.get(cause.id, {})
        support = _support(kb, qualities, against=False)
        contrary = _support(kb, qualities, against=True)
        held = [c for c in cause.conditions if _condition_holds(c, evidence.extracted)]
        why = [f"matched: {kb.signatures[i].pattern}" for i in qualities if not kb.signatures[i].against]
        why += [f"against: {kb.signatures[i].pattern}" for i in qualities if kb.signatures[i].against]
        why += [f"{left} {op} {factor:g} x {right}" for left, op, right, factor in held]
        fits = context.fits(cause.likely_when) if cause.likely_when else None
        if fits is not None:
            why.append(f"{'fits' if fits else 'does not fit'} the job ({context.workload or context.soc or 'context'})")
        logit = math.log(cause.prior) + 1.5 * support - 3.0 * contrary + 1.5 * len(held)
        logit += {True: CONTEXT_WEIGHT, False: -CONTEXT_WEIGHT, None: 0.0}[fits]
        logits.append(logit)
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


def diagnose(
    kb: CompiledKB,
    entry: EntryCard,
    evidence: EntryEvidence,
    context: JobContext,
    *,
    damp_generic: bool,
    damp_family: bool,
    frames: list[EvidenceLine] | None = None,
) -> Diagnosis:
    score = _signature_score(kb, evidence.signature_quality)
    if evidence.count > 1:
        score += min(0.3, 0.05 * math.log2(evidence.count))
    cause_support = max((_support(kb, q, against=False) for q in evidence.cause_quality.values()), default=0.0)
    score += CAUSE_SUPPORT_BONUS * min(1.0, cause_support)
    if entry.generic and damp_generic:
        score *= GENERIC_DAMPING
    if entry.family and damp_family:
        score *= FAMILY_DAMPING
    score *= STATUS_DAMPING.get(entry.status, 1.0)
    confidence = confidence_of(score)
    if entry.generic:
        confidence = min(confidence, GENERIC_MAX_CONFIDENCE)
    if entry.family:
        confidence = min(confidence, FAMILY_MAX_CONFIDENCE)
    listed = evidence.lines
    causes = _named_first(entry, listed, rank_causes(kb, entry, evidence, context))
    update = None
    if frames is not None and any(fix.get("culprit") for fix in entry.fixes):
        update = next(iter(culprit_advice(frames, listed[0] if listed else None, context)[1]), None)
    fixes, notes = order_fixes(list(entry.fixes), causes, context, update)
    if entry.family:
        # A family's fixes are for any of its failures; what this failure's own lines ask for is this one's.
        first, after = suggested_fixes([line.text for line in listed], context)
        fixes = first + fixes + after
    return Diagnosis(
        id=entry.id,
        category=_category_of(entry, causes),
        title=entry.title,
        severity=entry.severity,
        confidence=round(confidence, 3),
        score=round(score, 3),
        summary=entry.summary,
        generic=entry.generic,
        evidence=listed,
        evidence_count=evidence.count,
        causes=causes,
        fixes=fixes,
        probes=list(entry.probes),
        extracted=dict(evidence.extracted),
        references=[ReferenceResult(**ref) for ref in entry.references],
        rank=evidence.first_rank,
        first_seen=evidence.first_seen or 0,
        fix_notes=notes,
        family=entry.family,
    )


def _named_first(entry: EntryCard, listed: list[EvidenceLine], causes: list[CauseResult]) -> list[CauseResult]:
    """A family rule knows the kind of failure, its first line what failed (see `triage.engine.named`):
    that leads. Not a module that is missing: the rules for those tell a missing package from a
    missing submodule themselves."""
    named = named_failure(listed[0].text) if entry.family and listed else None
    return causes if named is None or named.kind == "module" else named.first_of(causes)


def _category_of(entry: EntryCard, causes: list[CauseResult]) -> str:
    """The entry's category, unless its likeliest own cause (a name the line gives may lead, see
    `_named_first`) is a failure of another kind (the compile failure whose compiler rejects the op's
    dtype is an unsupported op)."""
    own = {cause.id: cause for cause in entry.causes}
    leading = next((own[cause.id] for cause in causes if cause.id in own), None)
    return leading.category if leading is not None and leading.category else entry.category


def sort_key(diagnosis: Diagnosis) -> tuple[float, bool, int, int]:
    # On a tie the specific entry comes first: it knows more than the family rule beside it.
    return (-diagnosis.score, diagnosis.family, SEVERITY_ORDER.get(diagnosis.severity, 9), diagnosis.first_seen)


def _guesses(
    kb: CompiledKB,
    unclaimed: UnclaimedErrors,
    context: JobContext,
    diagnoses: list[Diagnosis],
    *,
    families: list[Diagnosis],
) -> list[Diagnosis]:
    """The safety net's guesses, placed in the ranking.

    With no failure found, an error no entry claims outranks warnings and wrappers: the job died
    of something no rule names, and a wrapper's category is a guess too. Beside a family rule, a
    guess of another family is an alternative and ranks below it, as are the families that the rule's
    own lines resemble when they are not the rule's.
    """
    guesses = diagnose_unclaimed(kb, unclaimed, context, need_neighbours=bool(diagnoses))
    if families:
        shown = {d.category for d in families}
        floor = min(d.score for d in families)
        guesses = [g for g in guesses if g.category not in shown]
        seen = shown | {g.category for g in guesses}
        guesses += second_opinion(kb, max(families, key=lambda d: d.score), seen)
        return _ranked_below(guesses, floor)
    top = max([d.score + 0.01 for d in diagnoses], default=0.0)
    for number, guess in enumerate(guesses):
        guess.score = max(guess.score, top - 0.001 * number)
    return guesses


def _ranked_below(guesses: list[Diagnosis], floor: float) -> list[Diagnosis]:
    """The guesses, each scored below `floor` (the lowest of what they stand beside), in their order."""
    for number, guess in enumerate(guesses, 1):
        guess.score = round(min(guess.score, floor - 0.01 * number), 3)
    return guesses


def build_result(
    kb: CompiledKB,
    evidence: dict[int, EntryEvidence],
    unclaimed: UnclaimedErrors | None = None,
    context: JobContext | None = None,
    *,
    top: int | None = None,
    min_confidence: float = 0.0,
) -> ScanResult:
    context = context or JobContext()
    # A stall entry's banner counts only where its log stopped.
    fired = {i: ev for i, ev in evidence.items() if ev.fired and (not kb.entries[i].stall or stalled_on(ev, unclaimed))}
    specific_found = any(not kb.entries[index].generic for index in fired)
    curated_found = any(
        not kb.entries[index].generic
        and not kb.entries[index].family
        and kb.entries[index].severity in FAILURE_SEVERITIES
        for index in fired
    )
    frames = [line for _, line in unclaimed.frames] if unclaimed is not None else None
    diagnoses = [
        diagnose(
            kb, kb.entries[index], ev, context, damp_generic=specific_found, damp_family=curated_found, frames=frames
        )
        for index, ev in fired.items()
    ]
    failing = [d for d in diagnoses if d.severity in FAILURE_SEVERITIES and not d.generic]
    if unclaimed is not None and not any(not d.family for d in failing):
        diagnoses += _guesses(kb, unclaimed, context, diagnoses, families=failing)
    elif failing:
        # Beside a specific entry too, the families its own lines resemble when they are not its own.
        shown = {d.category for d in diagnoses}
        opinions = second_opinion(kb, max(failing, key=lambda d: d.score), shown, disputed=True)
        diagnoses += _ranked_below(opinions, min(d.score for d in diagnoses))
    diagnoses = sorted((d for d in diagnoses if d.confidence >= min_confidence), key=sort_key)
    return ScanResult(diagnoses=diagnoses[:top] if top else diagnoses, context=context.to_json())
