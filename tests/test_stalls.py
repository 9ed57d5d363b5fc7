"""Stall entries: a banner healthy runs print too counts only where a log that has ended stops on it."""

from __future__ import annotations

import pytest

from triage.engine import Scanner
from triage.engine.unclaimed import UnclaimedErrors

STALL = "torch-extension-build-lock-hang"
BANNER = "[rank{n}]: Using /root/.cache/torch_extensions/py310_cpu as PyTorch extensions root..."
START = "[rank0]: [2026-11-28 02:17:44] INFO trainer.py:2241 building the model and the optimizer\n"


def ids(result) -> list[str]:
    return [d.id for d in result.diagnoses]


def test_a_log_that_ends_on_the_banner_of_every_rank_hung_there(scan_text):
    result = scan_text(START + "".join(BANNER.format(n=n) + "\n" for n in range(8)))
    assert ids(result)[:1] == [STALL]
    diagnosis = result.diagnoses[0]
    assert diagnosis.severity == "warning" and diagnosis.evidence[-1].line == 9
    assert "lock" in diagnosis.fixes[0].title


@pytest.mark.parametrize(
    "after",
    [
        # the job went past the banner: the line is chatter
        "".join(f"[rank0]: step {n} | loss {2.5 - n / 100:.4f}\n" for n in range(12)),
        # the job failed after it: the error says what happened, not the banner
        "[rank0]: RuntimeError: Error building extension 'cpu_adam'\n",
    ],
)
def test_the_banner_counts_only_where_the_log_stops_on_it(scan_text, after):
    assert STALL not in ids(scan_text(START + BANNER.format(n=0) + "\n" + after))


def test_a_log_still_being_written_has_not_stopped_on_its_last_line(engine_kb, prefilter):
    # `triage tail` and the TUI's follow mode read a log that grows: its last line is only the latest.
    scanner = Scanner(engine_kb, prefilter=prefilter)
    scanner.feed((START + BANNER.format(n=0) + "\n").encode(), "train.log")
    assert STALL not in ids(scanner.result())
    scanner.finish("train.log")
    assert STALL in ids(scanner.result())


def test_a_source_read_to_its_end_in_a_worker_stays_ended_when_merged():
    merged, later = UnclaimedErrors(), UnclaimedErrors()
    later.ended.add("rank_7.log")
    merged.merge(later, line_offset=1000, order_offset=10)
    assert merged.ended == {"rank_7.log"}
