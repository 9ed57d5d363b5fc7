"""The TUI's reader numbers lines as the scanner does, so evidence points at the displayed lines."""

from __future__ import annotations

import gzip
from pathlib import Path

from tui_support import ROOT

from triage.engine.scanner import Scanner
from triage.engine.setup import load_engine_kb
from triage.tui.reading import DisplaySink, LogBatch, LogReader

OOM = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n"


def _reader(paths: list[str], **options) -> tuple[LogReader, list[LogBatch], list[str], Scanner]:
    kb, errors = load_engine_kb([str(ROOT / "tests/fixtures/tui_kb")], include_shipped=False)
    assert not errors
    batches: list[LogBatch] = []
    notes: list[str] = []
    sink = DisplaySink(Scanner(kb), batches.append)
    return LogReader(sink, paths, notify=notes.append, **options), batches, notes, sink.scanner


def test_follow_reads_appended_lines_with_their_numbers(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("one\ntwo\n")
    reader, batches, _, scanner = _reader([str(log)], follow=True)
    reader.read_all(lambda: False)
    assert [b.lines for b in batches] == [["one", "two"]]
    with log.open("a") as handle:
        handle.write(OOM)
    reader.poll()
    reader.close()
    assert batches[-1] == LogBatch(str(log), 3, [OOM.strip()])
    assert scanner.result().diagnoses[0].evidence[0].line == 3


def test_gzip_missing_and_stdin_sources_are_read_once(tmp_path: Path):
    packed = tmp_path / "b.log.gz"
    packed.write_bytes(gzip.compress(b"x\n" + OOM.encode()))
    missing = str(tmp_path / "missing.log")
    reader, batches, notes, _ = _reader([str(packed), missing, "-"], follow=False, stdin_data=b"from stdin")
    reader.read_all(lambda: False)
    assert batches[0].lines == ["x", OOM.strip()]
    assert notes == [f"{missing}: no such file"]
    # The last line of a source counts without its newline, under the name the scanner gives stdin.
    assert batches[-1] == LogBatch("<stdin>", 1, ["from stdin"])
    assert not reader.following and reader.poll() == 0


def test_stop_ends_the_first_read_early(tmp_path: Path):
    log = tmp_path / "big.log"
    log.write_text("line\n" * 10)
    reader, batches, _, _ = _reader([str(log)], follow=False)
    reader.read_all(lambda: True)
    assert batches == []


def test_a_followed_log_that_went_quiet_is_ranked_again_with_its_stall(tmp_path: Path):
    kb, errors = load_engine_kb([])
    assert not errors
    log = tmp_path / "rank0.log"
    log.write_text("[rank0]: Using /root/.cache/torch_extensions/py310_cpu as PyTorch extensions root...\n")
    quiet: list[int] = []
    sink = DisplaySink(Scanner(kb), lambda _batch: None, on_quiet=lambda: quiet.append(1))
    reader = LogReader(sink, [str(log)], follow=True, notify=print, quiet_after=0)
    reader.read_all(lambda: False)
    assert quiet == [1]  # once for the spell
    assert sink.scanner.result().diagnoses[0].id == "torch-extension-build-lock-hang"
    sink.feed(b"[rank0]: step 1 | loss 2.5\n", str(log))  # it wrote again: not stopped any more
    assert str(log) not in sink.scanner.unclaimed.ended
    reader.close()
