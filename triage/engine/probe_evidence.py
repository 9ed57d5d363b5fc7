"""Fold live probe results into a scan: confirmed causes rise, ruled-out ones fall.

Probe results arrive as the probes' JSON objects (see probes/README.md), so this module needs
neither torch nor the probe runner.

A probe speaks for the device it ran on. The logs are from NPUs: a probe that ran on cpu or cuda
can confirm a cause that does not depend on the device (a double init, an allocator setting), but
cannot rule anything out, and what a device-bound probe (kernels, dtypes, numerics) saw there says
nothing about the NPU. Such verdicts are noted as "not testable here" and leave the ranking as it
was. A result without a device (the record of a `triage run` job) comes from the job itself.
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
TARGET_DEVICE = "npu"
DEVICE_BOUND_PROBES = frozenset({"op_support", "alignment", "loss_scale"})
"""Probes that measure the device's own kernels and numerics: only an NPU run speaks for an NPU."""

Verdicts = dict[str, list[str]]
"""cause id -> the notes of the findings that say so."""


def _device_of(result: dict[str, Any]) -> str | None:
    device = result.get("device")
    return str(device.get("type")) if isinstance(device, dict) and device.get("type") else None


def _verdicts(probe_results: list[dict[str, Any]]) -> tuple[Verdicts, Verdicts, Verdicts]:
    """Notes by cause id: findings that confirm it, that rule it out, and verdicts not testable where the probe ran."""
    confirms: Verdicts = {}
    rules_out: Verdicts = {}
    untestable: Verdicts = {}
    for result in probe_results:
        probe = str(result.get("probe", "probe"))
        device = _device_of(result)
        elsewhere = device is not None and device != TARGET_DEVICE
        where = f" (ran on {device})" if device else ""
        for finding in result.get("findings") or []:
            if not isinstance(finding, dict):
                continue
            note = f"{probe}{where}: {finding.get('message', finding.get('id', ''))}"
            confirming = untestable if elsewhere and probe in DEVICE_BOUND_PROBES else confirms
            for cause_id in finding.get("confirms") or []:
                confirming.setdefault(str(cause_id), []).append(note)
            for cause_id in finding.get("rules_out") or []:
                (untestable if elsewhere else rules_out).setdefault(str(cause_id), []).append(note)
    return confirms, rules_out, untestable


def _reweigh(diagnosis: Diagnosis, confirms: Verdicts, rules_out: Verdicts, untestable: Verdicts) -> Diagnosis:
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
        extra += [f"not testable here: {note}" for note in untestable.get(cause.id, [])]
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
    verdicts = _verdicts(probe_results)
    diagnoses = role_order(sorted((_reweigh(d, *verdicts) for d in result.diagnoses), key=sort_key))
    return replace(result, diagnoses=diagnoses, probes=list(probe_results))
