"""A file split across workers is counted as one scan counts it, on real, mixed content: logs glued
from corpus logs (CRLF, bare CRs, NUL bytes, a BOM, long lines), split in three so that every line
is near a split point, where a worker knows only its part (see `triage.parallel`)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import ROOT

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
def test_a_split_scan_counts_what_one_scan_counts(tmp_path: Path, engine_kb, prefilter, monkeypatch, seed: int) -> None:
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
        counted.append(
            (sorted((d.id, d.evidence_count) for d in result.diagnoses), result.stats.lines, result.stats.bytes)
        )
    one, split = counted
    assert one[0] and one == split


def test_the_last_line_of_a_split_log_that_stalls_has_its_number_in_the_whole_file(
    tmp_path: Path, engine_kb, prefilter, monkeypatch
) -> None:
    # A worker numbers its part's lines from 1; its tail (where a log that stalls stopped) is shifted
    # with the rest of what it found (it used to say line 6,578 of 20,001).
    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    lines = [f"[rank0]: step {n} | loss 2.{n % 97:02d} | lr 1e-4" for n in range(20000)]
    lines.append("INFO: Capturing CUDA graphs for decoding, this may take a while ...")
    path = tmp_path / "stalled.log"
    path.write_text("\n".join(lines) + "\n")
    assert len(parallel.split_points(str(path), 3)) == 3
    scanner = Scanner(engine_kb, prefilter=prefilter)
    assert scan_sources(scanner, [str(path)], jobs=3) == []
    stalled = scanner.result().diagnoses[0]
    assert stalled.guess and stalled.evidence[0].line == len(lines)
