"""Hostile inputs: each case runs the real CLI under a time and memory limit and must end cleanly,
with nothing that was found lost and no traceback. Fixtures live in tests/hostile/."""

from __future__ import annotations

import codecs
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

HOSTILE = Path(__file__).resolve().parent / "hostile"
MEMORY_LIMIT = 2 << 30
"""Address space per case: the alias bomb alone used to reach 6.5 GB."""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def bounded_triage(*args: str, stdin: bytes = b"", timeout: float = 20) -> subprocess.CompletedProcess:
    """`triage ARGS` in a child that may use at most `timeout` seconds and MEMORY_LIMIT bytes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-m", "triage", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def user_kb(name: str) -> list[str]:
    return ["--no-shipped-kb", "--kb", str(HOSTILE / name)]


# -- user KBs ---------------------------------------------------------------------------------------


def test_yaml_alias_bomb_is_refused_not_expanded():
    done = bounded_triage("scan", "--no-progress", *user_kb("kb_alias_bomb"), stdin=b"lol\n")
    assert b"aliases and anchors are not allowed" in done.stderr
    assert done.returncode == 2  # the only entry was refused: an empty KB is a usage error


def test_kb_validate_survives_an_alias_bomb():
    done = bounded_triage("kb", "validate", str(HOSTILE / "kb_alias_bomb"))
    assert done.returncode == 1 and b"aliases" in done.stdout + done.stderr


def test_oversized_kb_file_is_refused(tmp_path):
    from triage.kb.loader import MAX_ENTRY_BYTES, KBError, load_entry

    path = tmp_path / "big.yaml"
    path.write_text("id: big\n# " + "x" * MAX_ENTRY_BYTES + "\n")
    with pytest.raises(KBError, match="larger than"):
        load_entry(path)


def test_backtracking_user_regexes_are_refused_at_load_and_cannot_hang_a_scan():
    # Each pattern sits on a line crafted to make it backtrack; the safe entry must still fire.
    log = b"a" * 62 + b"\n" + b"x" * 40 + b"\n" + b"b" * 40 + b"\n" + b"RuntimeError: ZQX safe marker\n"
    done = bounded_triage("scan", "--no-progress", "--json", *user_kb("kb_redos"), stdin=log)
    warnings = done.stderr.decode()
    for entry in ("redos-alternation", "redos-adjacent", "redos-exclude", "redos-extract"):
        assert f"{entry}.yaml" in warnings, warnings
    assert done.returncode == 1 and b'"id": "safe-marker"' in done.stdout


@pytest.mark.parametrize("pattern", ["(a|aa)+$", "a*a*a*a*a*a*a*a*!", "(x+x+)+y", "((b+)+)c"])
def test_issue_patterns_are_unsafe(pattern):
    from triage.kb.regex_safety import unsafe_reason

    assert unsafe_reason(pattern)


@pytest.mark.parametrize("prefer", ["hyperscan", "re"])
def test_anchors_mean_line_boundaries(prefer):
    pytest.importorskip("hyperscan") if prefer == "hyperscan" else None
    from triage.engine import Scanner
    from triage.engine.compiled import compile_kb
    from triage.engine.prefilter import build_prefilter
    from triage.kb.loader import load_kb

    kb = compile_kb(load_kb([HOSTILE / "kb_anchored"])[0])
    scanner = Scanner(kb, prefilter=build_prefilter(kb, prefer=prefer))
    scanner.feed_text("step 1\nFATAL ZQX anchored failure\nstep 2\n", "job.log")
    assert [d.id for d in scanner.result().diagnoses] == ["anchored"]


# -- sources ----------------------------------------------------------------------------------------

OOM_LINE = b"RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity)\n"


def _read_all(path: str, chunk_size: int = 4096) -> tuple[bytes, str | None]:
    from triage.sources import SourceError, read_chunks

    data = bytearray()
    try:
        for chunk in read_chunks(path, chunk_size=chunk_size):
            data += chunk
    except SourceError as exc:
        return bytes(data), str(exc)
    return bytes(data), None


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=1)


def test_pipe_is_read_once_and_sniffed_on_the_same_handle():
    # `triage scan <(zcat job.log.gz)`: a /dev/fd path to a pipe, gzip or not.
    payload = OOM_LINE + b"step 1 loss 2.3\n" * 5000
    for body in (payload, _gzip(payload)):
        read_end, write_end = os.pipe()
        writer = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=write_end)
        os.close(write_end)
        writer.stdin.write(body)  # type: ignore[union-attr]
        writer.stdin.close()  # type: ignore[union-attr]
        try:
            data, error = _read_all(f"/dev/fd/{read_end}")
        finally:
            os.close(read_end)
            writer.wait(timeout=5)
        assert (data, error) == (payload, None)


def test_named_fifo_streams(tmp_path):
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {HOSTILE / 'oom.log'} > {fifo}"])
    done = bounded_triage("scan", "--no-progress", "--json", str(fifo), timeout=20)
    writer.wait(timeout=5)
    assert done.returncode == 1 and b"npu-out-of-memory" in done.stdout


def test_truncated_gzip_yields_every_line_before_the_cut(tmp_path):
    lines = b"".join(b"step %d loss 2.3\n" % n for n in range(1, 1330))
    whole = _gzip(lines)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) - 40])
    data, error = _read_all(str(path))
    assert error is not None and "truncated gzip" in error
    assert lines.startswith(data) and data.count(b"\n") >= 1300


def test_concatenated_gzip_members_are_all_read(tmp_path):
    path = tmp_path / "two.log.gz"
    path.write_bytes(_gzip(b"first\n") + _gzip(b"second\n"))
    assert _read_all(str(path)) == (b"first\nsecond\n", None)


def test_a_plain_file_is_read_holding_one_chunk_at_a_time(tmp_path):
    # The chunk being read and the one just handed over: never the first one kept to the end (1 MiB a scan).
    import tracemalloc

    from triage.sources import read_chunks

    path = tmp_path / "x.log"
    path.write_bytes(b"step 1 loss 2.3\n" * (4 << 16))
    tracemalloc.start()
    try:
        for _ in read_chunks(str(path), chunk_size=1 << 20):
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * (1 << 20)


def test_a_plain_file_is_read_to_line_ends_and_read_again_from_there(tmp_path):
    from triage.sources import read_to_line_ends

    content = b"short\r\n" + b"x" * 30 + b"\nline two\nline three\nno newline at the end"
    path = tmp_path / "x.log"
    path.write_bytes(codecs.BOM_UTF8 + content)
    reads = list(read_to_line_ends(str(path), chunk_size=11))
    assert b"".join(chunk[:end] for chunk, end in reads) == content
    # Each read ends at a line end, but where a line is longer than a read, and at the file's end.
    assert [chunk[:end] for chunk, end in reads] == [
        b"short\r\n",
        b"x" * 11,
        b"x" * 11,
        b"x" * 8 + b"\n",
        b"line two\n",
        b"line three\n",
        b"no newline ",
        b"at the end",
    ]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_log_is_read_as_text(tmp_path, encoding):
    # Windows PowerShell's `>` writes UTF-16: read raw, every other byte is a NUL and no word matches.
    from triage.sources import read_in_one_pass

    text = "step 1 loss 2.3\r\n" + OOM_LINE.decode() + "训练失败 ✓ 🙂\n"
    bom = b"\xfe\xff" if encoding == "utf-16-be" else b""
    for name, data in (("x.log", bom + text.encode(encoding)), ("x.log.gz", _gzip(bom + text.encode(encoding)))):
        path = tmp_path / name
        path.write_bytes(data)
        # Odd chunk sizes cut characters (and surrogate pairs) in half: the decoder carries them over.
        assert _read_all(str(path), chunk_size=7) == (text.encode("utf-8"), None)
    assert read_in_one_pass(str(tmp_path / "x.log")) and not read_in_one_pass(str(HOSTILE / "oom.log"))
    done = bounded_triage("scan", "--no-progress", "--json", str(tmp_path / "x.log"))
    top = json.loads(done.stdout)["diagnoses"][0]
    assert top["id"] == "npu-out-of-memory" and top["evidence"][0]["line"] == 2


def test_a_utf8_bom_is_not_part_of_line_one_with_any_number_of_jobs(tmp_path, engine_kb, prefilter, monkeypatch):
    # Notepad's "UTF-8 with BOM": left in, line 1 starts with U+FEFF, which a pattern anchored at ^ misses.
    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    path = tmp_path / "job.log"
    path.write_bytes(codecs.BOM_UTF8 + OOM_LINE + b"".join(b"step %d loss 2.3\n" % n for n in range(4000)))
    assert _read_all(str(path))[0].startswith(OOM_LINE)
    for jobs in (1, 2):
        scanner = Scanner(engine_kb, prefilter=prefilter)
        assert scan_sources(scanner, [str(path)], jobs=jobs) == []
        evidence = scanner.result().diagnoses[0].evidence[0]
        assert (evidence.line, evidence.text) == (1, OOM_LINE.decode().strip())


@pytest.mark.parametrize("kind", ["xz", "bz2"])
def test_xz_and_bzip2_logs_are_read_like_gzip(tmp_path, kind):
    import bz2
    import lzma

    def pack(data: bytes) -> bytes:
        return lzma.compress(data, preset=0) if kind == "xz" else bz2.compress(data, 1)

    lines = b"".join(b"step %d loss 2.3\n" % n for n in range(1, 1330)) + OOM_LINE
    path = tmp_path / f"job.log.{kind}"
    path.write_bytes(pack(lines) + pack(b"rotated\n"))  # two streams, as `cat a.xz b.xz` makes
    assert _read_all(str(path), chunk_size=7) == (lines + b"rotated\n", None)
    whole = pack(lines)
    path.write_bytes(whole[: len(whole) - 40])
    data, error = _read_all(str(path))
    assert error is not None and f"truncated {kind}" in error.replace("bzip2", "bz2")
    # xz streams out what it decoded; bzip2 decodes whole blocks (up to 900 kB of text), so a cut inside
    # this log's only block leaves nothing before it.
    assert lines.startswith(data) and data.count(b"\n") >= (1200 if kind == "xz" else 0)
    path.write_bytes(pack(b"\0" * (32 << 20) + OOM_LINE))  # a bomb: read 1 MiB at a time
    done = bounded_triage("scan", "--no-progress", "--json", "--jobs", "2", str(path), timeout=60)
    assert done.returncode == 1 and b"npu-out-of-memory" in done.stdout


def test_a_zstd_log_is_named_with_the_command_that_reads_it(tmp_path):
    path = tmp_path / "job.log.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(64))
    done = bounded_triage("scan", str(path))
    assert done.returncode == 2
    assert (
        done.stderr.decode().strip()
        == f"triage: {path}: zstd-compressed; decompress it first: zstd -dc {path} | triage scan"
    )


def test_gzip_bomb_is_streamed_in_bounded_memory(tmp_path):
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(_gzip(b"\0" * (100 << 20) + OOM_LINE))
    done = bounded_triage("scan", "--no-progress", "--json", str(path), timeout=60)
    assert done.returncode == 1 and b"npu-out-of-memory" in done.stdout


@pytest.mark.parametrize("output", [["--json"], []])
def test_exit_code_survives_a_closed_pipe(output):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "triage", "scan", "--no-progress", *output, str(HOSTILE / "oom.log")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    proc.stdout.close()  # type: ignore[union-attr]  # like `| head -0`: the reader is gone before a byte is written
    stderr = proc.stderr.read()  # type: ignore[union-attr]
    assert proc.wait(timeout=20) == 1 and b"Traceback" not in stderr


def test_split_point_search_reads_a_bounded_block(tmp_path, monkeypatch):
    from triage import parallel

    path = tmp_path / "one-line.log"
    with path.open("wb") as handle:
        handle.truncate(3 * parallel.MIN_PART_BYTES)  # sparse: one 192 MB line of zero bytes
    reads: list[int] = []
    real_open = open

    class Spy:
        def __init__(self, handle):  # type: ignore[no-untyped-def]
            self._handle = handle

        def read(self, size: int = -1) -> bytes:
            reads.append(size)
            return self._handle.read(size)

        def __getattr__(self, name):  # type: ignore[no-untyped-def]
            return getattr(self._handle, name)

        def __enter__(self):  # type: ignore[no-untyped-def]
            return self

        def __exit__(self, *exc):  # type: ignore[no-untyped-def]
            self._handle.close()

    monkeypatch.setattr("builtins.open", lambda *a, **k: Spy(real_open(*a, **k)))
    assert parallel.split_points(str(path), 2) == [(0, 3 * parallel.MIN_PART_BYTES)]
    assert reads and max(reads) <= parallel.SEEK_READ_SIZE


def test_a_file_that_cannot_be_split_is_scanned_without_workers(tmp_path, monkeypatch):
    from triage import parallel

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    bar, lines = tmp_path / "bar.log", tmp_path / "lines.log"
    bar.write_bytes(b"\r 10%|#" * 20000 + b"\n")  # one 160 KB progress-bar line
    lines.write_bytes(b"step 1 loss 2.3\n" * 10000)
    assert parallel.parallel_plan([str(bar)], 2) == {}
    assert len(parallel.parallel_plan([str(lines)], 2)[str(lines)]) == 2
    # Beside a source the parent reads itself (stdin), the one part is still worth a worker.
    assert parallel.parallel_plan([str(bar), "-"], 2) == {str(bar): [(0, bar.stat().st_size)]}


def test_on_one_core_a_big_file_given_alone_is_scanned_in_one_worker_that_maps_it(tmp_path, monkeypatch):
    from triage import parallel

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    bar, lines, small = tmp_path / "bar.log", tmp_path / "lines.log", tmp_path / "small.log"
    bar.write_bytes(b"\r 10%|#" * 20000 + b"\n")
    lines.write_bytes(b"step 1 loss 2.3\n" * 10000)
    small.write_bytes(b"step 1 loss 2.3\n" * 100)
    expected = {str(lines): [(0, lines.stat().st_size)]} if parallel.can_map() else {}
    assert parallel.parallel_plan([str(lines)], 1) == expected
    # Not one long line (a worker would copy its pieces out of the map), a small file, or several files.
    assert parallel.parallel_plan([str(bar)], 1) == {}
    assert parallel.parallel_plan([str(small)], 1) == {}
    assert parallel.parallel_plan([str(lines), str(small)], 1) == {}
    monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    assert parallel.parallel_plan([str(lines)], 1) == {}


def test_a_split_point_inside_a_very_long_line_is_given_up_not_read_to_its_end(tmp_path, monkeypatch):
    from triage import parallel

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    monkeypatch.setattr(parallel, "SEEK_READ_SIZE", 1 << 10)
    monkeypatch.setattr(parallel, "SPLIT_SEARCH_BYTES", 4 << 10)
    short = b"step 1 loss 2.3\n" * 2240  # 35,840 bytes
    path = tmp_path / "job.log"
    path.write_bytes(short + b"#" * 40_000 + b"\n" + short + b"x" * 8_000 + b"\n")
    size = path.stat().st_size
    ranges = parallel.split_points(str(path), 3)
    # The first cut falls inside the 40 KB line: given up; the second finds the line start after it.
    assert len(ranges) == 2 and ranges[0][0] == 0 and ranges[-1][1] == size
    assert ranges[0][1] == ranges[1][0] and path.read_bytes()[ranges[1][0] - 1 : ranges[1][0]] == b"\n"


def test_long_error_lines_cost_time_in_proportion_to_their_length():
    # Found by fuzzing: regexes that may start anywhere in a run of word characters (a path's, a
    # callable's, a warning class's) read the rest of the run from each of its characters: 100 such
    # 15 KB lines took 47 s, and `kb new` on one 1 MB line did not end.
    def letters(seed: int) -> str:  # a line of its own shape: no line stands for another
        return "".join(chr(ord("a") + (n * 7 + seed) * seed % 26) for n in range(15_000))

    log = "".join(
        f"RuntimeError: failed at a/b {letters(n)}\nW1201 12:00:00 Warning: Failed to load {letters(n + 1)} error\n"
        f"{letters(n + 2)}() raised an error\n"
        for n in range(1, 60)
    )
    done = bounded_triage("scan", "--no-progress", "--json", stdin=log.encode(), timeout=20)
    assert done.returncode == 1 and json.loads(done.stdout)["diagnoses"]


def test_every_kb_regex_reads_a_long_line_in_one_pass(engine_kb):
    # A 16 KB line of spaces took `^\s*E?\s+...` 5.5 s; of digits, an OOM's `([\d.]+ ?[KMGT]?i?B) free`
    # extract 14.6 s; read after launcher prefixes that could split a run of dashes, `^\s*Killed` 4 s on 24.
    from triage.engine.anchors import after_prefix
    from triage.kb.regex_safety import slow_on_long_runs

    patterns = set()
    for signature in engine_kb.signatures:
        extracts = [pattern for _, pattern, _ in signature.extract_sources if pattern is not None]
        sources = [s for s in (signature.regex_source, *signature.exclude_sources) if s is not None]
        patterns |= {*sources, *map(after_prefix, sources), *extracts}
    slow = [(pattern, found) for pattern in patterns if (found := slow_on_long_runs(pattern)) is not None]
    assert not slow, slow


# -- triage run -------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _start_run(tmp_path: Path, script: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    """`triage run --json ... -- sh -c SCRIPT` in the background, once SCRIPT has written $READY."""
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "READY": str(ready)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "triage", "run", "--json", *extra, "--", "sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_limit_memory,
    )
    for _ in range(200):
        if ready.exists() and ready.read_text().strip():
            return proc, ready
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the job never started")


def test_run_does_not_wait_for_a_background_descendant_and_ends_it(tmp_path):
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    done = bounded_triage("run", "--", "sh", "-c", f"sleep 25 & echo $! > {pidfile}; echo hi; exit 3")
    assert done.returncode == 3 and time.monotonic() - started < 10
    assert not _alive(int(pidfile.read_text()))


def test_sigterm_to_triage_stops_the_job_and_prints_the_summary(tmp_path):
    proc, _ = _start_run(
        tmp_path, f"printf '%s' \"{OOM_LINE.decode().strip()}\"; echo; echo go > $READY; exec sleep 30"
    )
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 128 + signal.SIGTERM, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["event"] == "summary" and summary["diagnoses"][0]["id"] == "npu-out-of-memory"
    assert b"Traceback" not in err


def test_a_job_that_ignores_signals_is_killed_after_the_grace(tmp_path):
    proc, _ = _start_run(tmp_path, "trap '' INT TERM; echo go > $READY; sleep 30; sleep 30", "--grace", "1")
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=15)
    assert time.monotonic() - started < 8
    assert proc.returncode == 128 + signal.SIGKILL


def test_ctrl_c_reaches_the_grandchildren(tmp_path):
    proc, ready = _start_run(tmp_path, "sleep 30 & echo $! > $READY; wait")
    grandchild = int(ready.read_text())
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=15)
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


# -- probes -----------------------------------------------------------------------------------------

_RUN_CHILD = """
import json, sys, time
from probes._subproc import run_json_child
started = time.monotonic()
outcome = run_json_child([sys.executable, "-c", sys.argv[1]], timeout=float(sys.argv[2]))
print(json.dumps({"error": outcome.error, "seconds": time.monotonic() - started}))
"""


def _probe_child(code: str, timeout: float) -> dict:
    """run_json_child on `code`, itself in a child under the memory limit."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN_CHILD, code, str(timeout)],
        capture_output=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_limit_memory,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


def test_a_probe_that_floods_stdout_is_read_with_a_cap():
    # 3 GB through the pipe: buffering it all would break the 2 GB address-space limit.
    flood = "import sys\nblock = b'x' * (1 << 20)\nfor _ in range(3072): sys.stdout.buffer.write(block)"
    outcome = _probe_child(flood, timeout=25)
    assert "bytes discarded" in outcome["error"] or "timed out" in outcome["error"]


def test_a_probe_grandchild_that_escapes_the_group_cannot_stretch_the_timeout():
    escape = (
        "import os, subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); time.sleep(6)'])\n"
        "time.sleep(6)"
    )
    outcome = _probe_child(escape, timeout=1)
    assert "timed out" in outcome["error"] and outcome["seconds"] < 4


# -- resource edges ---------------------------------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_tail_keeps_descriptors_bounded_and_still_sees_an_old_file_grow(tmp_path):
    from tests.test_tail import follow

    logs = [tmp_path / f"rank_{n}.log" for n in range(60)]
    for log in logs:
        log.write_bytes(b"step 0\n")
    before = _open_fds()
    follower, sink, notes = follow([tmp_path / "rank_*.log"], max_open=8, from_start=True)
    follower.poll()
    assert len(follower.paths) == 60 and _open_fds() - before <= 9
    with logs[3].open("ab") as handle:  # long closed as idle by now
        handle.write(OOM_LINE)
    follower.poll()
    assert OOM_LINE in sink.data[str(logs[3])] and _open_fds() - before <= 9
    assert not [note for note in notes if "no file matches" in note]
    follower.close()
    assert _open_fds() == before


def test_tail_under_a_low_descriptor_limit_reports_a_later_error(tmp_path):
    # `ulimit -n 64` and 100 rank files: the glob must not go blind, the late error must be reported.
    for n in range(100):
        (tmp_path / f"rank_{n}.log").write_bytes(b"step 0\n")
    script = (
        "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "import sys; from triage.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "tail", "--json", "--exit-on", "error", str(tmp_path / "rank_*.log")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 20
    while proc.poll() is None and time.monotonic() < deadline:  # until tail has started and seen it
        with (tmp_path / "rank_7.log").open("ab") as handle:
            handle.write(OOM_LINE)
        time.sleep(0.3)
    out, err = proc.communicate(timeout=5)
    assert b"npu-out-of-memory" in out, err
    assert b"no file matches" not in err and b"Traceback" not in err


def test_deeply_nested_yaml_and_regexes_are_refused():
    done = bounded_triage("kb", "list", "--kb", str(HOSTILE / "kb_deep"))
    assert done.returncode == 0
    assert done.stderr.count(b"skipped KB entry") == 2 and b"nested too deeply" in done.stderr, done.stderr
