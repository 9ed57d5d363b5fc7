"""Stall entries: a banner healthy runs print too counts only where a log that has ended stops on it."""

from __future__ import annotations

import pytest

from tests.test_progress import Clock
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


def test_a_followed_log_that_writes_nothing_for_a_while_is_reported_quiet_once_a_spell(tmp_path):
    from triage.follow import Follower

    log = tmp_path / "train.log"
    log.write_text(START)
    clock, fed, quiet = Clock(), [], []

    class Sink:
        def feed(self, data: bytes, source: str) -> None:
            fed.append(data)

        def finish(self, source: str) -> None:
            pass

    follower = Follower(
        [str(log)], Sink(), from_start=True, notify=print, clock=clock, quiet_after=300, on_quiet=quiet.append
    )
    follower.poll()
    clock.now += 299
    follower.poll()
    assert quiet == []
    clock.now += 2
    follower.poll()
    follower.poll()
    assert quiet == [str(log)]  # once, not at every poll
    with log.open("a") as out:
        out.write(BANNER.format(n=0) + "\n")
    follower.poll()
    clock.now += 301
    follower.poll()
    assert quiet == [str(log), str(log)]  # a new spell after it wrote again


def test_tail_reports_a_stall_once_the_log_has_been_quiet(engine_kb, prefilter):
    from triage.live import LiveScan

    events = []
    live = LiveScan(Scanner(engine_kb, prefilter=prefilter), events.append)
    live.feed((START + BANNER.format(n=0) + "\n").encode(), "train.log")
    assert STALL not in [e.diagnosis.id for e in events if e.diagnosis is not None]
    live.quiet("train.log")
    assert [e.diagnosis.id for e in events if e.kind == "diagnosis"][-1:] == [STALL]
    live.feed(b"[rank0]: step 1 | loss 2.5000\n", "train.log")  # it moved on: not stopped any more
    assert "train.log" not in live.scanner.unclaimed.ended


def test_triage_tail_names_the_hang_of_a_log_that_went_quiet(tmp_path, capsys, monkeypatch):
    import json

    from triage.cli import tail_cmd
    from triage.cli.main import main

    log = tmp_path / "rank0.log"
    log.write_text(START + "".join(BANNER.format(n=n) + "\n" for n in range(4)))
    monkeypatch.setattr(tail_cmd.time, "sleep", lambda _seconds: (_ for _ in ()).throw(KeyboardInterrupt))
    code = main(["tail", "--json", "--from-start", "--stall-after", "1e-9", str(log)])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0  # a stall is a warning: the job may yet move on
    assert [e["id"] for e in events if e["event"] == "diagnosis"] == [STALL]


def test_a_job_that_prints_nothing_for_a_while_is_reported_quiet_while_it_runs():
    import subprocess
    import sys

    from triage.instrument.job import Job

    banner = BANNER.format(n=0)
    code = f"print({banner!r}, flush=True); import time; time.sleep(1.0)"
    heard: list[int | None] = []
    with Job(quiet_after=0.3, on_quiet=lambda: heard.append(job.process.poll())) as job:
        process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        job.start(process)
        output = b""
        while chunk := job.read(1024):
            output += chunk
    assert banner.encode() in output
    assert heard == [None]  # once, while the job was still running
