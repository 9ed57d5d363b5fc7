"""`triage tail`: following files through rotation and truncation, live events, exit rules."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from rank_logs import DIST_FAILED, OOM, ROOT_RANK, TEST_KB, rank_log, write_rank_logs

from triage.events import Event, EventTracker
from triage.follow import Follower
from triage.live import LiveScan, stream_lines
from triage.results import CauseResult, Diagnosis, ScanResult, replace

ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    """A sink that keeps what it was fed, per source."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = defaultdict(bytes)
        self.finished: list[str] = []

    def feed(self, data: bytes, source: str) -> None:
        self.data[source] += data

    def finish(self, source: str) -> None:
        self.finished.append(source)


def follow(patterns: list[Path | str], **options) -> tuple[Follower, Recorder, list[str]]:
    sink, notes = Recorder(), []
    follower = Follower([str(p) for p in patterns], sink, notify=notes.append, rescan_seconds=0, **options)
    return follower, sink, notes


@pytest.fixture(scope="module")
def kb():
    from triage.engine import load_engine_kb

    kb, errors = load_engine_kb([str(TEST_KB)], strict=True, include_shipped=False)
    assert not errors
    return kb


@pytest.fixture
def live(kb):
    from triage.engine import Scanner

    events: list[Event] = []
    return LiveScan(Scanner(kb), events.append), events


# -- the follower ------------------------------------------------------------------------------


def test_starts_at_the_end_unless_asked_to_replay(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"history\n")
    follower, sink, _ = follow([log])
    follower.poll()
    with log.open("ab") as out:
        out.write(b"new\n")
    follower.poll()
    assert sink.data[str(log)] == b"new\n"

    replay, replayed, _ = follow([log], from_start=True)
    replay.poll()
    assert replayed.data[str(log)] == b"history\nnew\n"


def test_survives_rotation_and_reads_the_old_files_last_lines_first(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"old 1\n")
    follower, sink, notes = follow([log], from_start=True)
    follower.poll()
    with log.open("ab") as writer:  # the job still holds the old file when it is rotated
        os.rename(log, tmp_path / "a.log.1")
        writer.write(b"old 2\n")
    log.write_bytes(b"new 1\n")
    follower.poll()
    with log.open("ab") as writer:
        writer.write(b"new 2\n")
    follower.poll()
    assert sink.data[str(log)] == b"old 1\nold 2\nnew 1\nnew 2\n"
    assert any("replaced" in note for note in notes)


def test_truncation_restarts_from_the_beginning(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"a long first life of the file\n")
    follower, sink, notes = follow([log], from_start=True)
    follower.poll()
    log.write_bytes(b"second\n")  # opened with "w": truncated, then shorter
    follower.poll()
    assert sink.data[str(log)].endswith(b"\nsecond\n")
    assert any("truncated" in note for note in notes)


def test_a_rank_file_that_appears_later_is_read_whole(tmp_path):
    (tmp_path / "rank_0.log").write_bytes(b"rank 0 history\n")
    follower, sink, notes = follow([tmp_path / "rank_*.log"])
    follower.poll()
    (tmp_path / "rank_1.log").write_bytes(b"rank 1 from its start\n")
    follower.poll()
    assert sink.data == {str(tmp_path / "rank_1.log"): b"rank 1 from its start\n"}
    assert sorted(follower.paths) == [str(tmp_path / "rank_0.log"), str(tmp_path / "rank_1.log")]
    assert notes == []


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_log_is_followed_as_text(tmp_path, encoding):
    # What Windows PowerShell's Tee-Object writes; read raw, every other byte is a NUL and no pattern matches.
    bom = b"\xff\xfe" if encoding == "utf-16-le" else b"\xfe\xff"
    log = tmp_path / "a.log"
    log.write_bytes(bom + "训练 step 1\n".encode(encoding))
    replay, replayed, _ = follow([log], from_start=True)
    joined, joined_sink, _ = follow([log])  # from the end: the BOM was written before it started
    replay.poll(), joined.poll()
    written = "step 2 🙂\n".encode(encoding)
    for cut in (3, len(written)):  # a read that ends inside a character waits for the rest of it
        with log.open("ab") as out:
            out.write(written[:cut] if cut == 3 else written[3:])
        replay.poll(), joined.poll()
    assert replayed.data[str(log)] == "训练 step 1\nstep 2 🙂\n".encode()
    assert joined_sink.data[str(log)] == "step 2 🙂\n".encode()
    log.write_bytes(bom + "again\n".encode(encoding))  # truncated: the new start has its BOM again
    replay.poll()
    assert replayed.data[str(log)].endswith(b"\nagain\n")


def test_a_utf8_bom_is_not_part_of_the_first_line(tmp_path):
    # Notepad's "UTF-8 with BOM": left in, line 1 starts with U+FEFF and a pattern anchored at ^ misses it.
    log = tmp_path / "a.log"
    log.write_bytes(b"\xef\xbb\xbfRuntimeError: first\n")
    follower, sink, _ = follow([log], from_start=True)
    follower.poll()
    assert sink.data[str(log)] == b"RuntimeError: first\n"


def test_a_rotated_compressed_log_is_named_once_and_not_followed(tmp_path):
    import gzip

    (tmp_path / "rank_0.log").write_bytes(b"rank 0\n")
    (tmp_path / "rank_0.log.1.gz").write_bytes(gzip.compress(b"rank 0 yesterday\n"))
    follower, sink, notes = follow([tmp_path / "rank_0.log*"], from_start=True)
    for _ in range(3):
        follower.poll()
    assert sink.data == {str(tmp_path / "rank_0.log"): b"rank 0\n"}
    packed = tmp_path / "rank_0.log.1.gz"
    assert notes == [f"{packed}: compressed, not followed; read it with `triage scan {packed}`"]


def test_binary_data_a_glob_catches_is_named_once_and_not_followed(tmp_path):
    import random

    (tmp_path / "rank_0.log").write_bytes(b"rank 0\n")
    core = tmp_path / "rank_0.log.core"  # a core file beside the log: chance bytes, no log lines
    core.write_bytes(random.Random(7).randbytes(50_000))
    follower, sink, notes = follow([tmp_path / "rank_0.log*"], from_start=True)
    for _ in range(3):
        follower.poll()
    assert sink.data == {str(tmp_path / "rank_0.log"): b"rank 0\n"}
    assert notes == [f"{core}: binary data, not a text log; not followed"]


def test_deleted_file_is_reported_once_and_followed_again_when_back(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"")
    follower, sink, notes = follow([log])
    follower.poll()
    log.unlink()
    for _ in range(3):
        follower.poll()
    assert len(notes) == 1 and "deleted" in notes[0]
    assert sink.finished == [str(log)]
    log.write_bytes(b"back\n")
    follower.poll()
    assert sink.data[str(log)] == b"back\n"


def test_bad_paths_give_one_line_each_and_no_traceback(tmp_path, monkeypatch):
    (tmp_path / "dir.log").mkdir()
    log = tmp_path / "a.log"
    log.write_bytes(b"x\n")
    follower, _, notes = follow([tmp_path / "dir.log", tmp_path / "none_*.log", tmp_path / "missing.log", log])
    follower.poll()
    follower.poll()
    assert len(notes) == 3
    assert "is a directory" in notes[0] and "no file matches" in notes[1] and "no such file" in notes[2]

    def failing_fstat(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("triage.follow.os.fstat", failing_fstat)
    follower.poll()
    assert notes[-1] == f"{log}: Input/output error; no longer followed"
    assert str(log) not in follower.paths


# -- events ------------------------------------------------------------------------------------


def _diagnosis(role: str | None, cause: str = "a", confidence: float = 0.5) -> Diagnosis:
    return Diagnosis(
        id="x", category="hccl_timeout", title="X", severity="error", confidence=confidence, score=1.0,
        rank=0, role=role, causes=[CauseResult(id=cause, title=cause, probability=1.0)],
    )  # fmt: skip


def test_tracker_announces_once_and_updates_only_on_material_change():
    tracker = EventTracker()
    assert [e.kind for e in tracker.events(ScanResult(diagnoses=[_diagnosis("root")]))] == ["diagnosis"]
    assert tracker.events(ScanResult(diagnoses=[_diagnosis("root", confidence=0.9)])) == []
    (update,) = tracker.events(ScanResult(diagnoses=[_diagnosis("cascade", cause="b")]))
    assert update.kind == "update" and update.was == {"role": "root", "top_cause": "a"}
    assert update.to_json()["event"] == "update" and update.to_json()["was"] == {"role": "root", "top_cause": "a"}
    # The safety net's runners-up share one id, a family each: each is announced once, as itself.
    runners_up = [replace(_diagnosis(None), id="unrecognised-error-alternative", guess=True, category=c) for c in "ab"]
    assert [(e.kind, e.diagnosis.category) for e in tracker.events(ScanResult(diagnoses=runners_up))] == [
        ("diagnosis", "a"),
        ("diagnosis", "b"),
    ]
    assert tracker.events(ScanResult(diagnoses=runners_up)) == []


def test_live_scan_names_the_root_when_it_arrives_after_the_timeouts(live):
    scan, events = live
    for rank in (0, 1):
        scan.feed(rank_log(rank).encode(), f"rank_{rank}.log")
    assert [(e.kind, e.diagnosis.role) for e in events] == [("diagnosis", "root")]
    events.clear()
    scan.feed(rank_log(ROOT_RANK).encode(), f"rank_{ROOT_RANK}.log")
    assert [(e.kind, e.diagnosis.category, e.diagnosis.role) for e in events] == [
        ("diagnosis", "npu_oom", "root"),
        ("update", "hccl_timeout", "cascade"),
    ]
    assert events[1].was == {"role": "root"}
    assert scan.summary().result.root_rank == ROOT_RANK


def test_stream_lines_reports_as_it_reads_and_survives_binary_junk(live):
    scan, events = live
    junk = bytes(range(256)) * 64
    stream_lines(io.BytesIO(junk + f"\n[rank2]: {OOM}".encode()), scan, "child")  # last line has no newline
    assert [(e.kind, e.diagnosis.id, e.diagnosis.rank) for e in events] == [("diagnosis", "test-npu-oom", 2)]


# -- the command -------------------------------------------------------------------------------


def run_tail(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """Run `triage tail` in-process; the first sleep between polls acts as Ctrl-C."""
    from triage.cli import tail_cmd
    from triage.cli.main import main

    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tail_cmd.time, "sleep", interrupt)
    code = main(["tail", "--no-shipped-kb", "--kb", str(TEST_KB), *args])
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_json_events_and_exit_on(tmp_path, capsys, monkeypatch):
    write_rank_logs(tmp_path)
    code, out, _ = run_tail(
        capsys, monkeypatch, "--json", "--from-start", "--exit-on", "error", str(tmp_path / "rank_*.log")
    )
    assert code == 1
    events = json_lines(out)
    kinds = [event["event"] for event in events]
    assert kinds[0] == "diagnosis" and kinds[-1] == "summary"
    diagnoses = {event["id"]: event for event in events if event["event"] == "diagnosis"}
    assert diagnoses["test-npu-oom"]["rank"] == ROOT_RANK and "causes" in diagnoses["test-npu-oom"]
    summary = events[-1]
    assert summary["root_rank"] == ROOT_RANK and summary["diagnoses"][0]["role"] == "root"
    assert {d["role"] for d in summary["diagnoses"] if d["category"] == "hccl_timeout"} == {"cascade"}


def test_exit_on_a_worse_severity_keeps_following_until_ctrl_c(tmp_path, capsys, monkeypatch):
    write_rank_logs(tmp_path)
    code, out, _ = run_tail(
        capsys, monkeypatch, "--json", "--from-start", "--exit-on", "critical", str(tmp_path / "*.log")
    )
    assert code == 1 and json_lines(out)[-1]["diagnoses"]


def test_ctrl_c_with_nothing_found_exits_0(tmp_path, capsys, monkeypatch):
    (tmp_path / "quiet.log").write_text("step 1 | loss 2.0\n")
    code, out, err = run_tail(capsys, monkeypatch, "--json", "--from-start", str(tmp_path / "quiet.log"))
    events = json_lines(out)
    assert code == 0 and [e["event"] for e in events] == ["summary"] and events[0]["diagnoses"] == []
    assert events[0]["stats"]["lines"] == 1 and err == ""


def test_human_output_is_one_block_per_event(tmp_path, capsys, monkeypatch):
    write_rank_logs(tmp_path)
    code, out, _ = run_tail(capsys, monkeypatch, "--from-start", str(tmp_path / "rank_*.log"))
    assert code == 1
    assert "rank 5 · failed first" in out and "Summary: 2 diagnoses" in out and "Root rank: 5" in out


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_tail_subprocess_prints_a_diagnosis_as_it_is_written_and_a_summary_when_stopped(tmp_path, stop):
    log = tmp_path / "rank_3.log"
    log.write_text("[rank3]: step 1 | loss 2.0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "triage", "tail", "--json", "--no-shipped-kb", "--kb", str(TEST_KB), str(log)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as child:
        deadline = time.monotonic() + 10
        diagnosis = None
        while diagnosis is None and time.monotonic() < deadline:
            with log.open("a") as out:  # until the child is up and at the end of the file
                out.write(f"[rank3]: {DIST_FAILED}\n")
            time.sleep(0.2)
            if child.poll() is not None:
                break
            diagnosis = _first_line(child)
        child.send_signal(stop)
        rest, err = child.communicate(timeout=10)
    assert diagnosis is not None and json.loads(diagnosis)["event"] == "diagnosis", err
    assert json.loads(rest.splitlines()[-1])["event"] == "summary"
    assert child.returncode == 1 and "Traceback" not in err


def _first_line(child: subprocess.Popen) -> str | None:
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        if selector.select(timeout=0):
            return child.stdout.readline()
    return None


def test_human_summary_counts_in_words_a_reader_expects(tmp_path, capsys, monkeypatch):
    (tmp_path / "one.log").write_text("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    code, out, _ = run_tail(capsys, monkeypatch, "--from-start", str(tmp_path / "one.log"))
    assert code == 1
    assert "Summary: 1 diagnosis from 1 line" in " ".join(out.split())
