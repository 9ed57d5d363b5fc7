"""A file split across workers is counted and weighed as one scan does it, on real, mixed content:
logs glued from corpus logs (CRLF, bare CRs, NUL bytes, a BOM, long lines), split in three so that
every line is near a split point (see `triage.parallel`)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import ROOT
from triage.results import ScanResult

CORPUS = ROOT / "logs_samples" / "real" / "logs"


def _glued_log(rng: random.Random, size: int) -> bytes:
    names = sorted(path.name for path in CORPUS.glob("*.log"))
    parts: list[bytes] = []
    while sum(map(len, parts)) < size:
        data = (CORPUS / rng.choice(names)).read_bytes()
        if rng.random() < 0.3:
            data = data.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\x00", b"\n\n"]))
        if rng.random() < 0.1:
            data += b"#" * rng.randrange(1000, 40000)
        parts.append(data)
    return (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + b"".join(parts)


@pytest.mark.parametrize("seed", [2, 3, 5])
def test_a_split_scan_counts_and_weighs_what_one_scan_does(
    tmp_path: Path, engine_kb, prefilter, monkeypatch, seed: int
) -> None:
    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    path = tmp_path / "glued.log"
    path.write_bytes(_glued_log(random.Random(seed), 120_000))
    assert len(parallel.split_points(str(path), 3)) == 3
    counted = []
    for jobs in (1, 3):  # one part (read here, or mapped by one worker), then three
        scanner = Scanner(engine_kb, prefilter=prefilter)
        assert scan_sources(scanner, [str(path)], jobs=jobs) == []
        result = scanner.result()
        weighed = sorted(
            (d.id, d.evidence_count, d.confidence, [(c.id, c.probability) for c in d.causes]) for d in result.diagnoses
        )
        counted.append((weighed, result.stats.lines, result.stats.bytes))
    one, split = counted
    assert one[0] and one == split


def test_the_last_line_of_a_split_log_that_stalls_has_its_number_in_the_whole_file(
    tmp_path: Path, engine_kb, prefilter, monkeypatch
) -> None:
    # A worker numbers its part's lines from 1; its tail (where a log that stalls stopped) is shifted
    # with the rest of what it found (it used to say line 6,578 of 20,001).
    lines = [f"[rank0]: step {n} | loss 2.{n % 97:02d} | lr 1e-4" for n in range(20000)]
    lines.append("INFO: Capturing CUDA graphs for decoding, this may take a while ...")
    stalled = _split_in_three(tmp_path / "stalled.log", lines, engine_kb, prefilter, monkeypatch).diagnoses[0]
    assert stalled.guess and stalled.evidence[0].line == len(lines)


def test_an_unclaimed_error_line_repeated_across_parts_is_counted_once_a_line(
    tmp_path: Path, engine_kb, prefilter, monkeypatch
) -> None:
    # The safety net's count of a repeated error line: each part's count, not one per part after the
    # first (a split scan said 340 of 1,000).
    lines = []
    for n in range(20000):
        lines.append(f"[rank0]: step {n} | loss 2.{n % 97:02d} | lr 1e-4")
        if n % 20 == 0:
            lines.append("FrobnicatorError: the widget flux capacitor stalled unexpectedly")
    guess = _split_in_three(tmp_path / "repeated.log", lines, engine_kb, prefilter, monkeypatch).diagnoses[0]
    assert guess.guess and guess.evidence_count == 1000


def test_a_worker_reads_back_to_the_line_a_cause_window_reaches(monkeypatch) -> None:
    # CAUSE_WINDOW lines before its part, or as far as WARM_BYTES reach, always from a line start.
    import io

    from triage import parallel
    from triage.engine.evidence import CAUSE_WINDOW

    rng = random.Random(1)
    for _ in range(100):
        lines = [b"x" * rng.choice([0, 1, 5, 80, 3000]) + b"\n" for _ in range(rng.randrange(1, 5000))]
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        k = rng.randrange(len(lines))
        monkeypatch.setattr(parallel, "SEEK_READ_SIZE", rng.choice([7, 1000, 1 << 20]))
        monkeypatch.setattr(parallel, "WARM_BYTES", rng.choice([50, 100_000, 8 << 20]))
        low = max(0, starts[k] - parallel.WARM_BYTES)
        expected = starts[max(0, k - CAUSE_WINDOW)]
        if expected < low:
            expected = next((start for start in starts[: k + 1] if start >= low), starts[k])
        assert parallel._warm_start(io.BytesIO(b"".join(lines)), starts[k]) == expected


def _split_in_three(path: Path, lines: list[str], engine_kb, prefilter, monkeypatch) -> ScanResult:
    """The result of scanning these lines, written to `path`, split in three."""
    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    path.write_text("\n".join(lines) + "\n")
    assert len(parallel.split_points(str(path), 3)) == 3
    scanner = Scanner(engine_kb, prefilter=prefilter)
    assert scan_sources(scanner, [str(path)], jobs=3) == []
    return scanner.result()
