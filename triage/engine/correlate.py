"""Multi-rank correlation: which rank failed first, and which failures merely followed it.

When one rank dies (out of memory, a segfault), the others block in their next collective until HCCL
gives up, so a job of N ranks reports one real failure and N-1 communication timeouts. This names the
first failure the root (the best explained of what that rank reported at that moment), marks the
communication failures after it as cascade and ranks them below it.
Pure: it reads a ScanResult and returns a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from triage.engine.timestamps import LineTime, parse_time
from triage.results import Diagnosis, ScanResult, replace

COMMS_CATEGORY = "hccl_timeout"
"""Failures that one rank suffers because another rank stopped talking to it."""
FAILURE_SEVERITIES = frozenset({"critical", "error"})
"""Only these can be a root: a warning logged before the crash did not stop the job."""


@dataclass(frozen=True)
class _Onset:
    """When and where a diagnosis was first seen in its evidence."""

    when: datetime | None
    rank: int | None
    arrival: int


def correlate(result: ScanResult, *, top: int | None = None) -> ScanResult:
    """Date the evidence, name the root failure and its rank, demote the cascade; keep `top` after.

    The cut comes after re-ranking so that `--top 1` shows the root, not the loudest timeout.
    Results without any rank information are only dated: there is nothing to correlate.
    """
    times = _line_times(result.diagnoses)
    pairs = []
    for diagnosis, line_times in zip(result.diagnoses, times):
        onset = _onset(diagnosis, line_times)
        pairs.append((_dated(diagnosis, line_times, onset), onset))
    diagnoses = [diagnosis for diagnosis, _ in pairs]
    root_rank = None
    if any(_ranks_known(diagnosis) for diagnosis in diagnoses):
        diagnoses, root_rank = _assign_roles(pairs)
    return replace(result, diagnoses=diagnoses[:top] if top else diagnoses, root_rank=root_rank)


def _line_times(diagnoses: list[Diagnosis]) -> list[list[LineTime | None]]:
    times = [[parse_time(line.text) for line in diagnosis.evidence] for diagnosis in diagnoses]
    found = [time for row in times for time in row if time is not None]
    years = [time.when.year for time in found if time.has_year]
    if years and not all(time.has_year for time in found):
        # glog lines carry no year: give them the job's, so that they order among the dated lines.
        # Only the year-less lines are read again; dated ones keep what they were parsed as.
        year = min(years)
        times = [
            [
                parse_time(line.text, year=year) if time is not None and not time.has_year else time
                for line, time in zip(diagnosis.evidence, row)
            ]
            for diagnosis, row in zip(diagnoses, times)
        ]
    return times


def _onset(diagnosis: Diagnosis, times: list[LineTime | None]) -> _Onset:
    # Lines that only support a cause (an EI0002 entry quoting the OOM that started it) do not date it.
    timed = [
        (time.when, line.rank)
        for line, time in zip(diagnosis.evidence, times)
        if time is not None and line.supports is None
    ]
    if not timed:
        return _Onset(None, diagnosis.rank, diagnosis.first_seen)
    # min() keeps the first of equal times, and evidence lines are in arrival order.
    when, rank = min(timed, key=lambda pair: pair[0])
    return _Onset(when, rank if rank is not None else diagnosis.rank, diagnosis.first_seen)


def _dated(diagnosis: Diagnosis, times: list[LineTime | None], onset: _Onset) -> Diagnosis:
    # A year-less time is shown as nothing rather than with a borrowed year.
    evidence = [
        replace(line, timestamp=time.when if time is not None and time.has_year else None)
        for line, time in zip(diagnosis.evidence, times)
    ]
    return replace(diagnosis, evidence=evidence, rank=onset.rank)


def _ranks_known(diagnosis: Diagnosis) -> bool:
    return diagnosis.rank is not None or any(line.rank is not None for line in diagnosis.evidence)


def _earlier(a: _Onset, b: _Onset, *, by_time: bool) -> bool:
    """Time when both lines say it, else arrival order (which is real time when tailing)."""
    if by_time and a.when is not None and b.when is not None:
        return (a.when, a.arrival) < (b.when, b.arrival)
    return a.arrival < b.arrival


def _same_moment(a: _Onset, b: _Onset) -> bool:
    """Seen on the same rank (or on no named rank), and at the same time where both lines give one."""
    return a.rank == b.rank and (a.when is None or b.when is None or a.when == b.when)


def _assign_roles(pairs: list[tuple[Diagnosis, _Onset]]) -> tuple[list[Diagnosis], int | None]:
    candidates = [(d, onset) for d, onset in pairs if d.severity in FAILURE_SEVERITIES and not d.generic]
    # A family rule knows the class of a failure, a specific entry the failure: the root is the latter.
    candidates = [(d, onset) for d, onset in candidates if not d.family] or candidates
    if not candidates:
        return [d for d, _ in pairs], None
    # Times order the candidates only when all of them have one: a mix would compare times for some
    # pairs and arrival for others, which is no order at all.
    by_time = all(onset.when is not None for _, onset in candidates)
    first, first_onset = min(candidates, key=lambda pair: (pair[1].when if by_time else datetime.min, pair[1].arrival))
    # What the first failing rank reports at that moment is one failure told several ways (a wrapper's
    # line before the detail it wraps): its root is the best explained of them.
    root, root_onset = max(
        (pair for pair in candidates if _same_moment(pair[1], first_onset)), key=lambda pair: pair[0].score
    )
    cascade: list[Diagnosis] = []
    others: list[tuple[Diagnosis, _Onset]] = []
    for diagnosis, onset in pairs:
        if (
            diagnosis is not root
            and diagnosis.category == COMMS_CATEGORY
            and not diagnosis.guess
            and not _same_moment(onset, root_onset)
            and not _earlier(onset, root_onset, by_time=by_time)
        ):
            cascade.append(replace(diagnosis, role="cascade"))
        else:
            others.append((diagnosis, onset))
    marked_root = replace(root, role="root")
    return role_order([marked_root if d is root else d for d, _ in others] + cascade), root.rank


def role_order(diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    """Score order, except that when a root has a cascade, the root leads and the cascade trails.

    `diagnoses` come in score order; anything that re-ranks them (probes) calls this again, so that
    a confirmed timeout cannot climb back above the failure it followed.
    """
    cascade = [d for d in diagnoses if d.role == "cascade"]
    if not cascade:
        return list(diagnoses)
    roots = [d for d in diagnoses if d.role == "root"]
    others = [d for d in diagnoses if d.role is None]
    return [*roots, *others, *cascade]
