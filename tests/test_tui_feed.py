"""LogFeed numbers lines as the scanner does, so evidence points at the displayed lines."""

from __future__ import annotations

import gzip
from pathlib import Path

from triage.engine.scanner import Scanner
from triage.tui.feed import LogBatch, LogFeed
from triage.engine.setup import load_engine_kb
from tui_support import ROOT

OOM = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n"


def _scanner() -> Scanner:
    kb, errors = load_engine_kb([str(ROOT / "tests/fixtures/tui_kb")], include_shipped=False)
    assert not errors
    return Scanner(kb)


def test_follow_reads_appended_lines_with_their_numbers(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("one\ntwo\n")
    scanner = _scanner()
    feed = LogFeed(scanner, [str(log)])
    assert [b.lines for b in feed.read_all(follow=True)] == [["one", "two"]]
    with log.open("a") as handle:
        handle.write(OOM)
    batches = list(feed.poll())
    feed.close()
    assert batches == [LogBatch(str(log), 3, [OOM.strip()])]
    assert scanner.result().diagnoses[0].evidence[0].line == 3


def test_gzip_and_missing_sources(tmp_path: Path):
    packed = tmp_path / "b.log.gz"
    packed.write_bytes(gzip.compress(b"x\n" + OOM.encode()))
    feed = LogFeed(_scanner(), [str(packed), str(tmp_path / "missing.log")])
    items = list(feed.read_all(follow=True))
    assert isinstance(items[0], LogBatch) and items[0].lines[1] == OOM.strip()
    assert "no such file" in str(items[1])
    assert list(feed.poll()) == []  # a gzip stream is read once, never followed


def test_follow_reads_a_rotated_file_from_its_start_once(tmp_path):
    from triage.engine import Scanner, load_engine_kb
    from triage.tui.feed import LogFeed

    kb, _ = load_engine_kb()
    log = tmp_path / "train.log"
    log.write_text("old line 1\nold line 2\nold line 3\n")
    feed = LogFeed(Scanner(kb), [str(log)])
    list(feed.read_all(follow=True))
    rotated = tmp_path / "train.log.1"
    log.rename(rotated)
    log.write_text("new 1\n")
    first = [line for batch in feed.poll() for line in getattr(batch, "lines", [])]
    again = [line for batch in feed.poll() for line in getattr(batch, "lines", [])]
    feed.close()
    assert first == ["new 1"] and again == []
