"""Both faces follow files with the one follower: a rotated log is read from its start, once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tui_support import ROOT

from triage.engine.scanner import Scanner
from triage.engine.setup import load_engine_kb
from triage.follow import Follower
from triage.live import LiveScan
from triage.tui.reading import DisplaySink, LogBatch, LogReader

OOM = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"

Face = tuple[Callable[[], int], Callable[[], None], Scanner]
"""(poll, close, the face's scanner)"""


def _tail(path: str, scanner: Scanner, notes: list[str]) -> Face:
    # What `triage tail` runs: the follower feeding a live scan that prints events.
    follower = Follower([path], LiveScan(scanner, lambda _event: None), notify=notes.append, rescan_seconds=0)
    follower.poll()
    return follower.poll, follower.close, scanner


def _tui(path: str, scanner: Scanner, notes: list[str]) -> Face:
    # What `triage tui --follow` runs: the same follower behind the display sink.
    shown: list[LogBatch] = []
    reader = LogReader(DisplaySink(scanner, shown.append), [path], follow=True, notify=notes.append)
    reader.read_all(lambda: False)
    return reader.poll, reader.close, scanner


@pytest.mark.parametrize("face", [_tail, _tui], ids=["tail", "tui"])
def test_a_rotated_log_is_read_from_its_start_once(tmp_path: Path, face):
    kb, _ = load_engine_kb([str(ROOT / "tests/fixtures/tui_kb")], include_shipped=False)
    log = tmp_path / "train.log"
    log.write_text("old line 1\nold line 2\n")
    notes: list[str] = []
    poll, close, scanner = face(str(log), Scanner(kb), notes)
    log.rename(tmp_path / "train.log.1")
    log.write_text(f"new 1\n{OOM}\n")
    poll()  # drains the old file, sees the new one
    poll()  # reads the new one from its start
    poll()  # nothing more: the new file is not read twice
    close()
    assert f"{log}: replaced (rotated); following the new file" in notes
    (diagnosis,) = scanner.result().diagnoses
    assert [line.text for line in diagnosis.evidence] == [OOM]
