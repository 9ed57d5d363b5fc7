"""The progress line of long scans, and how far forked workers have read, as the parent hears it."""

from __future__ import annotations

import gzip
import mmap
import os
import threading
import time

from triage import parallel
from triage.cli import progress as progress_module
from triage.cli.progress import ProgressReporter, known_size

MIB = 1 << 20


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_is_drawn_in_the_first_second_then_the_share_speed_and_time_left(capsys):
    clock = Clock()
    reporter = ProgressReporter(100 * MIB, clock)
    clock.now += 0.9
    reporter.update("a.log", 30 * MIB)
    assert capsys.readouterr().err == ""  # a scan done within a second never draws the line
    clock.now += 0.1
    reporter.update("a.log", 40 * MIB)
    line = capsys.readouterr().err
    assert "scanned 40.0 MiB of 100 MiB (40%) at 40 MiB/s, about 2 s left" in line
    assert line.startswith("\r") and line.endswith("\x1b[K")
    reporter.close()
    assert capsys.readouterr().err == "\r\x1b[K"


def test_the_line_is_redrawn_at_most_four_times_a_second(capsys):
    clock = Clock()
    reporter = ProgressReporter(None, clock)
    clock.now += 1.0
    reporter.update("-", MIB)
    clock.now += 0.1
    reporter.update("-", 2 * MIB)
    assert capsys.readouterr().err.count("scanned") == 1


def test_an_input_of_unknown_size_shows_what_was_read_and_how_fast(capsys):
    clock = Clock()
    reporter = ProgressReporter(None, clock)
    clock.now += 2.0
    reporter.update("-", 512 * MIB)
    line = capsys.readouterr().err
    assert "scanned 512 MiB at 256 MiB/s" in line
    assert "%" not in line and "left" not in line


def test_speed_and_time_left_follow_the_last_seconds_not_the_whole_scan(capsys):
    clock = Clock()
    reporter = ProgressReporter(1000 * MIB, clock)
    clock.now += 1.0
    reporter.update("a.log", 500 * MIB)  # fast at first ...
    clock.now += 9.0
    reporter.update("a.log", 509 * MIB)  # ... then one megabyte a second
    line = capsys.readouterr().err.split("\r")[-1]
    assert "at 1 MiB/s" in line and "about 8 min left" in line


def test_a_stalled_scan_claims_no_speed_and_no_time_left(capsys):
    clock = Clock()
    reporter = ProgressReporter(100 * MIB, clock)
    clock.now += 1.0
    reporter.update("a.log", 10 * MIB)
    clock.now += 6.0
    reporter.update("a.log", 10 * MIB)
    line = capsys.readouterr().err.split("\r")[-1]
    assert "scanned 10.0 MiB of 100 MiB (10%)" in line
    assert "MiB/s" not in line and "left" not in line


def test_known_size_is_the_files_sizes_unless_one_is_read_as_a_stream(tmp_path):
    plain, other = tmp_path / "a.log", tmp_path / "b.log"
    plain.write_bytes(b"x" * 1000 + b"\n")
    other.write_bytes(b"y\n")
    packed = tmp_path / "c.log.gz"
    packed.write_bytes(gzip.compress(b"z\n" * 1000))
    assert known_size([str(plain), str(other)]) == 1003
    assert known_size([str(plain), str(tmp_path / "missing.log")]) == 1001  # reported apart, adds nothing
    assert known_size([str(plain), "-"]) is None
    assert known_size([str(packed)]) is None  # its size on disk is not what the scan reads


def test_a_reporter_only_on_a_terminal(monkeypatch, tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"x\n")
    monkeypatch.setattr(progress_module.sys.stderr, "isatty", lambda: False)
    assert ProgressReporter.for_paths([str(log)]) is None
    monkeypatch.setattr(progress_module.sys.stderr, "isatty", lambda: True)
    reporter = ProgressReporter.for_paths(["-"])
    assert reporter is not None and reporter.total is None


def test_the_parent_hears_while_it_waits_for_a_worker():
    read_end, write_end = os.pipe()
    heard = []

    def worker() -> None:
        time.sleep(0.3)
        os.write(write_end, b"part")
        os.close(write_end)

    thread = threading.Thread(target=worker)
    thread.start()
    assert parallel.read_pipe(read_end, lambda: heard.append(1)) == b"part"
    thread.join()
    assert heard  # called while nothing came through


def test_a_worker_writes_how_far_it_has_read(tmp_path, engine_kb, prefilter):
    from triage.engine import Scanner

    log = tmp_path / "a.log"
    log.write_bytes(b"step 1 loss 0.5\n" * 200_000)
    shared = mmap.mmap(-1, 16)
    counter = parallel.SharedCount(shared, 1)
    part, error = parallel._scan_range(
        Scanner(engine_kb, prefilter=prefilter), str(log), 16, log.stat().st_size, "a.log", counter
    )
    assert error is None and part.lines == 200_000 - 1
    assert counter.get() == log.stat().st_size - 16
    assert parallel.SharedCount(shared, 0).get() == 0  # its neighbour's slot is its neighbour's


def test_a_parallel_scan_reports_each_files_bytes_as_its_workers_read_them(tmp_path, engine_kb, prefilter, monkeypatch):
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 64 << 10)
    monkeypatch.setattr(parallel, "REPORT_SECONDS", 0.001)
    log = tmp_path / "a.log"
    log.write_bytes(b"[rank0]: step 1 loss 0.5 tokens/s 1234\n" * 40_000)
    heard: list[tuple[str, int]] = []
    errors = scan_sources(
        Scanner(engine_kb, prefilter=prefilter), [str(log)], progress=lambda *seen: heard.append(seen), jobs=2
    )
    assert not errors
    sizes = [done for _, done in heard]
    assert sizes == sorted(sizes) and sizes[-1] == log.stat().st_size
    assert len(heard) > 1  # heard while the workers scanned, not only once they were done
    assert {name for name, _ in heard} == {str(log)}
