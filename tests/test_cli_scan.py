"""`triage scan` as a user runs it: exit codes, JSON contract, stdin, bad input."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.kb_helpers import entry_data, write_entry

OOM = (
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; "
    "20.13 GiB already allocated; 20.13 GiB current active; 1.01 GiB free; 50.61 GiB reserved in total by PyTorch)\n"
)


def triage(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "triage", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def oom_log(tmp_path: Path) -> Path:
    path = tmp_path / "train.log"
    path.write_text("step 1 loss 2.3\n" * 20 + OOM + "step 2 loss 2.2\n")
    return path


def test_found_exits_1_with_human_output(oom_log):
    proc = triage("scan", str(oom_log))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode()
    assert "npu-out-of-memory" in out and "expandable_segments:True" in out
    assert f"{oom_log}:21" in out


def test_nothing_found_exits_0(tmp_path):
    path = tmp_path / "ok.log"
    path.write_text("step 1 loss 2.3\nstep 2 loss 2.2\n")
    proc = triage("scan", str(path))
    assert proc.returncode == 0
    assert "No known failure" in proc.stdout.decode()


def test_warnings_alone_are_no_failure_to_exit_on(tmp_path):
    # A healthy run that falls back to the CPU for one op is diagnosed, as a warning, and exits 0:
    # a CI step must not fail on it.
    path = tmp_path / "slow.log"
    fallback = (
        "[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently "
        "supported on the NPU backend and will fall back to run on the CPU. This may have performance implications."
    )
    path.write_text(f"step 1 loss 2.3\n{fallback}\nstep 2 loss 2.2\n")
    proc = triage("scan", "--json", str(path))
    diagnoses = json.loads(proc.stdout)["diagnoses"]
    assert diagnoses and {d["severity"] for d in diagnoses} == {"warning"}
    assert proc.returncode == 0, proc.stderr
    path.write_text(f"{fallback}\nRuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    assert triage("scan", str(path)).returncode == 1


def test_json_contract(oom_log):
    proc = triage("scan", "--json", str(oom_log))
    data = json.loads(proc.stdout)
    assert data["version"] == 1
    assert set(data["stats"]) >= {"lines", "bytes", "seconds"}
    diagnosis = data["diagnoses"][0]
    for key in (
        "id",
        "category",
        "title",
        "severity",
        "confidence",
        "score",
        "evidence",
        "causes",
        "fixes",
        "probes",
        "extracted",
    ):
        assert key in diagnosis
    assert diagnosis["evidence"][0] == {
        "source": str(oom_log),
        "line": 21,
        "text": OOM.strip(),
        "rank": None,
        "timestamp": None,
        "supports": None,
    }
    assert 0 <= diagnosis["confidence"] <= 1


def test_stdin_pipe_and_dash():
    for args in (("scan", "--json"), ("scan", "--json", "-")):
        proc = triage(*args, stdin=OOM.encode())
        assert proc.returncode == 1
        assert json.loads(proc.stdout)["diagnoses"][0]["evidence"][0]["source"] == "<stdin>"


def test_top_and_min_confidence(oom_log):
    data = json.loads(triage("scan", "--json", "--min-confidence", "0.99", str(oom_log)).stdout)
    assert data["diagnoses"] == []
    data = json.loads(triage("scan", "--json", "--top", "1", str(oom_log)).stdout)
    assert len(data["diagnoses"]) == 1


def test_usage_errors_exit_2(tmp_path):
    assert triage("scan", "--top", "0").returncode == 2
    assert triage("scan", "--min-confidence", "3").returncode == 2
    assert triage("scan", "--probe-timeout", "nan").returncode == 2
    assert triage("probe", "run", "env", "--timeout", "0").returncode == 2
    assert triage("nonsense").returncode == 2


@pytest.mark.parametrize(
    "name, content",
    [
        ("empty.log", b""),
        ("latin1.log", "caf\xe9 ERROR d\xe9j\xe0 vu\n".encode("latin-1")),
        ("gbk.log", "训练失败: 内存不足\n".encode("gbk")),
        ("crlf.log", b"step 1\r\nstep 2\r\n"),
        ("ansi.log", b"\x1b[32mINFO\x1b[0m all good\n"),
    ],
    ids=["empty", "latin1", "gbk", "crlf", "ansi"],
)
def test_odd_inputs_are_scanned_without_traceback(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    proc = triage("scan", "--json", str(path))
    assert b"Traceback" not in proc.stderr
    diagnoses = json.loads(proc.stdout)["diagnoses"]
    # A line that says ERROR or 失败 is an error: only the safety net's low-confidence guess may answer it.
    assert proc.returncode == (1 if diagnoses else 0), proc.stderr
    assert all(d["guess"] and d["confidence"] < 0.5 for d in diagnoses)
    assert bool(diagnoses) == (name in ("latin1.log", "gbk.log"))


def _binary_lines(count: int) -> bytes:
    """Binary data with error words among its bytes, as a dump's strings table may hold them: a
    scan that took its lines for text would report an unrecognised error."""
    chance = random.Random(7)

    def noise() -> bytes:
        return chance.randbytes(200).replace(b"\n", b" ")

    return b"".join(noise() + b" ERROR: out of memory " + noise() + b"\n" for _ in range(count))


def test_binary_data_is_named_and_skipped_not_diagnosed(tmp_path):
    core = tmp_path / "core.bin"
    core.write_bytes(bytes(range(256)) * 4000 + _binary_lines(50))
    packed = tmp_path / "core.bin.gz"
    packed.write_bytes(gzip.compress(core.read_bytes(), compresslevel=1))
    proc = triage("scan", "--json", str(core), str(packed))
    assert proc.returncode == 2 and json.loads(proc.stdout)["diagnoses"] == []
    assert proc.stderr.decode().splitlines() == [
        f"triage: {path}: binary data, not a text log; skipped" for path in (core, packed)
    ]
    # Beside a real log, the real log's failure is still reported (exit 1) and the binary file named.
    log = tmp_path / "job.log"
    log.write_text(OOM)
    proc = triage("scan", "--json", str(core), str(log))
    assert proc.returncode == 1 and b"binary data" in proc.stderr
    assert [d["id"] for d in json.loads(proc.stdout)["diagnoses"]] == ["npu-out-of-memory"]


def test_a_binary_stretch_inside_a_text_log_raises_nothing(tmp_path):
    # A healthy log that starts as text, then holds binary bytes (a dump written into it), then goes
    # on: nothing failed. A log rotated with copytruncate starts with NULs and is text all the same.
    path = tmp_path / "mixed.log"
    path.write_bytes(b"step 1 loss 2.3\n" * 5000 + _binary_lines(50) + b"step 2 loss 2.2\n")
    proc = triage("scan", "--json", str(path))
    assert (proc.returncode, proc.stderr, json.loads(proc.stdout)["diagnoses"]) == (0, b"", [])
    holed = tmp_path / "rotated.log"
    holed.write_bytes(b"\0" * 100_000 + OOM.encode())
    proc = triage("scan", "--json", str(holed))
    assert proc.returncode == 1 and proc.stderr == b""
    assert [d["id"] for d in json.loads(proc.stdout)["diagnoses"]] == ["npu-out-of-memory"]


def test_error_inside_crlf_and_ansi_is_found(tmp_path):
    path = tmp_path / "mixed.log"
    path.write_bytes(b"\x1b[31m" + OOM.strip().encode() + b"\x1b[0m\r\nstep 2\r\n")
    data = json.loads(triage("scan", "--json", str(path)).stdout)
    assert data["diagnoses"][0]["id"] == "npu-out-of-memory"
    assert data["diagnoses"][0]["evidence"][0]["text"] == OOM.strip()


def test_huge_single_line(tmp_path):
    path = tmp_path / "huge.log"
    with path.open("wb") as handle:
        handle.write(b"x" * (30 << 20))
        handle.write(OOM.encode())
    proc = triage("scan", "--json", str(path))
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["diagnoses"][0]["id"] == "npu-out-of-memory"


def test_gzip_and_truncated_gzip_keep_what_was_found(tmp_path):
    good = tmp_path / "a.log.gz"
    noise = "".join(f"step {i} loss {i * 7919 % 1000 / 997:.6f} tokens {i * 104729 % 99991}\n" for i in range(200000))
    good.write_bytes(gzip.compress((OOM + noise).encode(), compresslevel=1))
    proc = triage("scan", "--json", str(good))
    assert proc.returncode == 1 and json.loads(proc.stdout)["diagnoses"]
    truncated = tmp_path / "b.log.gz"
    truncated.write_bytes(good.read_bytes()[:-2000])
    proc = triage("scan", "--json", str(truncated))
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["diagnoses"][0]["id"] == "npu-out-of-memory"
    assert b"truncated gzip" in proc.stderr and b"Traceback" not in proc.stderr


def test_a_directory_is_read_file_by_file(tmp_path, oom_log):
    ranks = tmp_path / "logs" / "job-7"
    ranks.mkdir(parents=True)
    (ranks / "rank_0.log").write_text("step 1 loss 2.3\n")
    (ranks / "rank_1.log").write_bytes(oom_log.read_bytes())
    (ranks / ".rank_1.log.swp").write_bytes(b"\x00" * 64)  # an editor's file: hidden, not read
    proc = triage("scan", "--json", str(tmp_path / "logs"))
    assert proc.returncode == 1 and not proc.stderr
    result = json.loads(proc.stdout)
    assert result["diagnoses"][0]["id"] == "npu-out-of-memory"
    assert {e["source"] for e in result["diagnoses"][0]["evidence"]} == {str(ranks / "rank_1.log")}


def test_missing_directory_and_unreadable(tmp_path, oom_log):
    proc = triage("scan", str(tmp_path / "nope.log"))
    assert proc.returncode == 2 and proc.stderr.decode().strip() == f"triage: {tmp_path / 'nope.log'}: no such file"
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = triage("scan", str(empty))
    assert proc.returncode == 2 and proc.stderr.decode().strip() == f"triage: {empty}: a directory with no files in it"
    # a bad source next to a good one: the diagnosis is still reported
    proc = triage("scan", "--json", str(tmp_path / "nope.log"), str(oom_log))
    assert proc.returncode == 1 and json.loads(proc.stdout)["diagnoses"]
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.log"
        locked.write_text("x")
        locked.chmod(0)
        assert b"permission denied" in triage("scan", str(locked)).stderr


def test_malformed_user_kb_entry_is_skipped_with_a_warning(tmp_path, oom_log):
    bad = tmp_path / "kb" / "npu_oom"
    bad.mkdir(parents=True)
    (bad / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n")
    proc = triage("scan", "--json", "--kb", str(tmp_path / "kb"), str(oom_log))
    assert proc.returncode == 1
    assert b"broken.yaml:" in proc.stderr and b"Traceback" not in proc.stderr


def test_a_user_kb_regex_with_escapes_only_text_knows_is_searched_in_bytes_too(tmp_path):
    # `\u2018` compiles for text, not for the bytes the prefilter searches: it made every scan with this
    # KB end in a traceback. A bytes-only problem (`(?u)`) is a one-line KB error instead.
    kb = tmp_path / "kb"
    quoted = {"regex": "widget (?:\\u2018|')frob(?:\\u2019|') failed", "weight": 3}
    write_entry(kb, entry_data("curly-quotes", "other", signatures=[quoted], examples={}))
    log = tmp_path / "job.log"
    log.write_text("step 1\nRuntimeError: widget \u2018frob\u2019 failed\n", encoding="utf-8")
    proc = triage("scan", "--json", "--kb", str(kb), str(log))
    assert b"Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["diagnoses"][0]["id"] == "curly-quotes"
    flagged = {"regex": "(?u)widget frob failed", "weight": 3}
    write_entry(kb, entry_data("curly-quotes", "other", signatures=[flagged], examples={}))
    proc = triage("scan", "--json", "--kb", str(kb), str(log))
    assert b"Traceback" not in proc.stderr and b"cannot be searched in a log's bytes" in proc.stderr


def test_user_kb_overrides_shipped_entry(tmp_path, oom_log):
    shipped = (ROOT / "kb" / "npu_oom" / "npu-out-of-memory.yaml").read_text()
    user = tmp_path / "kb" / "npu_oom"
    user.mkdir(parents=True)
    (user / "npu-out-of-memory.yaml").write_text(shipped.replace("severity: error", "severity: critical", 1))
    data = json.loads(triage("scan", "--json", "--kb", str(tmp_path / "kb"), str(oom_log)).stdout)
    assert data["diagnoses"][0]["severity"] == "critical"


def test_runs_from_another_directory(tmp_path, oom_log):
    proc = triage("scan", "--json", str(oom_log), cwd=tmp_path)
    assert proc.returncode == 1


def test_markdown_report_with_redaction(tmp_path, oom_log):
    report = tmp_path / "report.md"
    log = tmp_path / "host.log"
    log.write_text(f"[worker 10.20.30.40:29500] {OOM}")
    proc = triage("scan", "--report", str(report), "--redact", str(log))
    assert proc.returncode == 1
    text = report.read_text()
    assert text.startswith("# ascend-triage report") and "expandable_segments:True" in text
    assert "NPU out of memory" in text and "10.20.30.40" not in text and str(tmp_path) not in text
    # A report asked for and not written fails the step, whatever was found and --exit-zero or not.
    unwritten = triage("scan", "--exit-zero", "--report", str(tmp_path / "no" / "dir.md"), str(oom_log))
    assert unwritten.stderr.startswith(b"triage: cannot write") and unwritten.returncode == 2
    assert b"NPU out of memory" in unwritten.stdout


def test_exit_zero_still_prints_the_diagnosis(oom_log):
    proc = triage("scan", "--exit-zero", str(oom_log))
    assert proc.returncode == 0, proc.stderr
    assert "npu-out-of-memory" in proc.stdout.decode()
    assert triage("scan", "--exit-zero", str(oom_log.parent / "missing.log")).returncode == 2
