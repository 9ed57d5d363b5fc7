"""Cause-evidence lines are looked for only near lines that may be an entry's own: what counts is
the same as if every line were scanned, however the log arrives."""

from __future__ import annotations

import dataclasses

import pytest

from triage.engine import Scanner
from triage.engine.cause_lines import NearLeads, stretches
from triage.engine.evidence import CAUSE_WINDOW

EI0006 = "[rank0]: EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time."
CAUSE = "[rank0]: Running tokenizer on dataset"
"""A line of the `slow-rank` cause of hccl-ei0006-socket-timeout."""


def lines_of(block: bytes, start: int, end: int) -> tuple[int, int]:
    """The first and last line numbers (from 0) of block[start:end]."""
    return block.count(b"\n", 0, start), block.count(b"\n", 0, end - 1)


def test_stretches_reach_the_window_around_each_lead_the_carried_lines_and_the_last_lines():
    block = b"".join(b"line %d\n" % n for n in range(20_000))
    position = {n: block.index(b"line %d\n" % n) for n in (5000, 6000, 12_000)}
    plan = stretches(block, 0, len(block), [position[5000], position[6000]], carry=10)
    assert [lines_of(block, start, end) for start, end in plan.stretches] == [
        (0, 9),
        (5000 - CAUSE_WINDOW, 6000 + CAUSE_WINDOW),
        (20_000 - 1 - CAUSE_WINDOW, 19_999),
    ]
    assert plan.marks == [(position[5000], 5000), (position[6000], 6000)]
    assert lines_of(block, plan.tail, len(block)) == (20_000 - 1 - CAUSE_WINDOW, 19_999)
    plan = stretches(block, position[12_000], len(block), [], carry=0)
    assert [lines_of(block, start, end) for start, end in plan.stretches] == [(20_000 - 1 - CAUSE_WINDOW, 19_999)]
    assert plan.marks == [] and plan.stretches == [(plan.tail, len(block))]


def test_a_cause_line_is_kept_only_near_a_lead_of_its_own_entry_or_in_the_blocks_last_lines():
    block = b"".join(b"line %d\n" % n for n in range(10_000))
    near = NearLeads()
    plan = near.plan(block, (0, len(block)), [(block.index(b"line 5000\n"), frozenset({7}))], lines_before=0)
    own, other = (7, "cause", 0, 1.0, {}), (8, "cause", 1, 1.0, {})
    assert near.supports(5001 + CAUSE_WINDOW, (own, other)) == (own,)
    assert near.supports(5002 + CAUSE_WINDOW, (own, other)) == ()
    assert lines_of(block, plan.tail, len(block))[0] + 1 == near.kept_from == 10_000 - CAUSE_WINDOW
    assert near.supports(near.kept_from, (own, other)) == (own, other)


def scan(engine_kb, prefilter, data: bytes, chunk: int) -> Scanner:
    scanner = Scanner(engine_kb, prefilter=prefilter)
    for start in range(0, len(data), chunk):
        scanner.feed(data[start : start + chunk], "x.log")
    scanner.finish("x.log")
    return scanner


def cause_log() -> bytes:
    """Own lines at 3,000 and 9,000, cause lines just inside and just outside their windows, and
    cause chatter far from both."""
    lines = [f"step {n} | loss 0.{n % 97:02d}" for n in range(12_000)]
    for number in (3000, 9000):
        lines[number - 1] = EI0006
    for number in (200, 3000 - CAUSE_WINDOW - 1, 3000 - CAUSE_WINDOW, 3000 + CAUSE_WINDOW, 9000 - CAUSE_WINDOW, 11_500):
        lines[number - 1] = CAUSE
    return ("\n".join(lines) + "\n").encode()


def slow_rank_lines(scanner: Scanner, engine_kb) -> list[int]:
    """The lines listed for the EI0006 entry's slow-rank cause: the first that counted."""
    entry = next(n for n, e in enumerate(engine_kb.entries) if e.id == "hccl-ei0006-socket-timeout")
    evidence = scanner.evidence.get(entry)
    return [seen.line for seen, cause, _ in evidence.support if cause == "slow-rank"] if evidence else []


@pytest.mark.parametrize("chunk", [1 << 30, 100_000, 4096, 333])
def test_the_first_cause_line_within_a_window_counts_however_the_log_is_cut(engine_kb, prefilter, chunk):
    whole = scan(engine_kb, prefilter, cause_log(), 1 << 30)
    scanner = scan(engine_kb, prefilter, cause_log(), chunk)
    # Not the chatter at line 200, nor the line one past the window: the first line within it.
    assert slow_rank_lines(scanner, engine_kb) == [3000 - CAUSE_WINDOW]
    assert scanner.result().diagnoses == whole.result().diagnoses


@pytest.mark.parametrize(
    ("offset", "counts"),
    [(-CAUSE_WINDOW, True), (-CAUSE_WINDOW - 1, False), (CAUSE_WINDOW, True), (CAUSE_WINDOW + 1, False)],
)
@pytest.mark.parametrize("chunk", [1 << 30, 4096])
def test_a_cause_line_counts_only_within_the_window_of_an_own_line(engine_kb, prefilter, offset, counts, chunk):
    lines = [f"step {n}" for n in range(3 * CAUSE_WINDOW)]
    lines[CAUSE_WINDOW + 9] = EI0006
    lines[CAUSE_WINDOW + 9 + offset] = CAUSE
    scanner = scan(engine_kb, prefilter, ("\n".join(lines) + "\n").encode(), chunk)
    assert slow_rank_lines(scanner, engine_kb) == ([CAUSE_WINDOW + 10 + offset] if counts else [])


def test_cause_chatter_far_from_any_own_line_changes_nothing(scan_text):
    chatter = [CAUSE, "DataLoader num_workers=8 ready"] * 20 + ["step 1"] * (CAUSE_WINDOW + 10)
    quiet = scan_text(EI0006 + "\n")
    loud = scan_text("\n".join(chatter) + "\n" + EI0006 + "\n")
    assert [dataclasses.replace(d, evidence=[]) for d in loud.diagnoses] == [
        dataclasses.replace(d, evidence=[]) for d in quiet.diagnoses
    ]
    assert loud.diagnoses[0].first_seen == 1  # only own lines and error lines are numbered


def test_the_python_prefilter_finds_the_same_cause_lines(engine_kb, prefilter):
    from triage.engine.prefilter import PythonPrefilter

    fast = scan(engine_kb, prefilter, cause_log(), 4096)
    slow = scan(engine_kb, PythonPrefilter(engine_kb), cause_log(), 4096)
    assert slow_rank_lines(slow, engine_kb) == slow_rank_lines(fast, engine_kb) == [3000 - CAUSE_WINDOW]
    assert slow.result().diagnoses == fast.result().diagnoses
