"""A worker's part read through memory maps (triage.mapped): the same bytes as a read, the same
line ends, and a file cut short while mapped costs the worker, not the scan."""

from __future__ import annotations

import codecs
import faulthandler
import mmap
import random
import signal
from collections.abc import Iterator
from typing import BinaryIO

import pytest

from tests.test_engine import OOM
from triage.mapped import MappedWindow, can_map, mapped_windows

pytestmark = pytest.mark.skipif(not can_map(), reason="the native line-shape table is not built or is turned off")


def _random_log(rng: random.Random, lines: int) -> bytes:
    """Lines of any length, a few longer than a window, some ending in CRLF."""
    out = []
    for _ in range(lines):
        length = rng.choice([0, 1, 5, 40, 200, 3000, 9000])
        out.append(bytes(rng.choice(b"abc 0123\t:") for _ in range(length)) + rng.choice([b"\n", b"\r\n"]))
    return b"".join(out)


@pytest.mark.parametrize("seed", range(6))
def test_the_windows_of_a_part_hold_its_bytes_once_and_end_on_line_ends(tmp_path, seed):
    rng = random.Random(seed)
    data = (codecs.BOM_UTF8 if seed % 2 else b"") + _random_log(rng, 300) + b"no newline at the end"
    path = tmp_path / "job.log"
    path.write_bytes(data)
    start = 0 if seed < 3 else data.index(b"\n", len(data) // 3) + 1
    stop = len(data) if seed % 3 else data.index(b"\n", 2 * len(data) // 3) + 1
    with open(path, "rb") as handle:
        windows = list(mapped_windows(handle, start, stop - start, size=4099))
    assert len(windows) > 10
    assert b"".join(window[begin:end] for window, begin, end in windows) == data[start:stop].removeprefix(
        codecs.BOM_UTF8
    )
    for window, begin, end in windows[:-1]:
        # A window ends on a line end, unless one line fills it (its rest comes in the next).
        assert window[end - 1 : end] == b"\n" or (window.find(b"\n", begin) < 0 and end == len(window))


def test_a_window_counts_newlines_as_bytes_does(tmp_path):
    data = _random_log(random.Random(9), 200)
    path = tmp_path / "job.log"
    path.write_bytes(data)
    with open(path, "rb") as handle:
        window = MappedWindow(handle.fileno(), len(data), access=mmap.ACCESS_READ)
    rng = random.Random(1)
    for _ in range(500):
        start, end = sorted(rng.randrange(len(data) + 1) for _ in range(2))
        assert window.count(b"\n", start, end) == data.count(b"\n", start, end)
    assert window.count(b"\n") == data.count(b"\n")
    with pytest.raises(ValueError):
        window.count(b"\r")


def test_a_part_the_file_no_longer_holds_ends_where_the_file_ends(tmp_path):
    # Planned before a rotation cut the file short: the windows stop where the file stops, as reads do.
    path = tmp_path / "job.log"
    path.write_bytes(b"step 1 loss 2.3\n" * 1000)
    with open(path, "rb") as handle:
        path.write_bytes(b"step 1 loss 2.3\n" * 10)
        windows = list(mapped_windows(handle, 0, 16_000, size=4096))
    assert b"".join(window[begin:end] for window, begin, end in windows) == b"step 1 loss 2.3\n" * 10


def test_a_file_that_cannot_be_mapped_is_read(tmp_path, monkeypatch):
    # Some FUSE and network file systems refuse mmap (ENODEV): the part is read instead, from where it stood.
    from triage import mapped

    data = _random_log(random.Random(4), 200)
    path = tmp_path / "job.log"
    path.write_bytes(data)
    made = []

    def refused_after_two(*args: object, **kwargs: object) -> MappedWindow:
        if len(made) == 2:
            raise OSError(19, "No such device")
        made.append(MappedWindow(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(mapped, "MappedWindow", refused_after_two)
    with open(path, "rb") as handle:
        windows = list(mapped_windows(handle, 0, len(data), size=4099))
    assert len(made) == 2 and not isinstance(windows[-1][0], MappedWindow)
    assert b"".join(window[begin:end] for window, begin, end in windows) == data


def test_a_file_cut_short_while_a_worker_maps_it_costs_that_worker_only(tmp_path, engine_kb, prefilter, monkeypatch):
    # Its lost pages kill the worker (SIGBUS); the parent says so in one line and keeps the other parts.
    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 64 << 10)
    lines = [f"[rank0]: step {number} | loss 2.{number % 97:02d} | lr 1e-4" for number in range(30000)]
    path = tmp_path / "big.log"
    path.write_text("\n".join([OOM, *lines, OOM]) + "\n")
    size = path.stat().st_size

    def cut_short(
        handle: BinaryIO, start: int, limit: int, window_size: int
    ) -> Iterator[tuple[MappedWindow, int, int]]:
        for window, begin, end in mapped_windows(handle, start, limit, window_size):
            if start > 0 and start + limit == size:  # the last part (not the lines its worker reads before it)
                faulthandler.disable()  # pytest's, inherited: a dump of the stack is not what this test reads
                window.madvise(mmap.MADV_DONTNEED)
                with open(path, "r+b") as cutting:
                    cutting.truncate(start)
            yield window, begin, end

    monkeypatch.setattr(parallel, "mapped_windows", cut_short)
    scanner = Scanner(engine_kb, prefilter=prefilter)
    errors = scan_sources(scanner, [str(path)], jobs=2)
    assert len(errors) == 1 and f"killed by signal {signal.SIGBUS.value}, SIGBUS: the file was cut short" in errors[0]
    result = scanner.result()
    assert result.diagnoses[0].evidence[0].line == 1  # the first part's OOM is kept
    assert size > path.stat().st_size
