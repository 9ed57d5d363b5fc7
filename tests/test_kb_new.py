"""`triage kb new`: from a log to an entry that validates and ranks first on that log."""

from __future__ import annotations

import json
import random
import re

import pytest
import yaml

from triage.cli.main import main
from triage.kbtools.scaffold import ScaffoldError, key_lines, message_of, parse_range, regex_for

LOG = """\
2025-03-02 08:15:01 INFO trainer.py:412] step 120 | loss 1.8421 | lr 2.0e-05 | 5.3 it/s
2025-03-02 08:15:02 INFO trainer.py:412] step 121 | loss 1.8390 | lr 2.0e-05 | 5.3 it/s
[W compiler_depend.ts:51] Warning: CAUTION: synthetic warning that is not the failure
Traceback (most recent call last):
  File "/opt/job/train.py", line 88, in <module>
    out = model(batch)
[rank2]: RuntimeError: Qubit scheduler failed on device 3 at 0x7f3a12 after 41 retries (/opt/job/sched/q.py)
[ERROR] 2025-03-02-08:15:03 (PID:5151, Device:3, RankID:2) ERR00100 PTA call acl api failed
"""


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "x.log"
    path.write_text(LOG)
    return path


def test_contributor_flow(tmp_path, log, capsys):
    out_dir = tmp_path / "mykb"
    assert main(["kb", "new", "--from", str(log), "--out", str(out_dir)]) == 0
    written = list(out_dir.glob("*/*.yaml"))
    assert len(written) == 1
    data = yaml.safe_load(written[0].read_text())
    assert written[0].stem == data["id"] and written[0].parent.name == data["category"]
    assert data["examples"]["match"] == [LOG.splitlines()[6]]
    assert "step 120" in data["examples"]["no_match"][0]
    capsys.readouterr()

    assert main(["kb", "validate", str(out_dir)]) == 0
    assert "0 errors" in capsys.readouterr().out

    assert main(["scan", "--kb", str(out_dir), str(log), "--json", "--no-progress"]) == 1
    diagnoses = json.loads(capsys.readouterr().out)["diagnoses"]
    assert diagnoses[0]["id"] == data["id"]


def test_a_huge_error_line_makes_a_draft_the_kb_loads(tmp_path, capsys):
    # Found by fuzzing: a 1 MB line (a progress bar's, a pasted blob's) was copied whole into the
    # draft's example, and the KB loader skips files over 256 KB: the draft never validated.
    log = tmp_path / "big.log"
    noise = "x" * 300_000
    log.write_text(f"step 1 | loss 1.2 | lr 1e-4 | {noise}\n[rank0]: RuntimeError: frobnicator jammed {noise}\n")
    out_dir = tmp_path / "kb"
    assert main(["kb", "new", "--from", str(log), "--out", str(out_dir)]) == 0
    capsys.readouterr()
    assert main(["kb", "test", str(out_dir)]) == 0
    assert "1 passed" in capsys.readouterr().out


def test_key_line_skips_tracebacks_warnings_and_wrappers():
    assert key_lines(LOG.splitlines())[0].startswith("[rank2]: RuntimeError: Qubit scheduler failed")


def test_regex_masks_variables_and_keeps_codes():
    message = message_of(
        "[rank2]: RuntimeError: Sync failed 41 times at 0x7f3a on /a/b.py, error code is 507015 (EZ1001)"
    )
    regex = regex_for(message)
    assert message.startswith("RuntimeError:")
    assert "507015" in regex and "EZ1001" in regex and "0x7f3a" not in regex and "/a/b.py" not in regex
    assert re.search(
        regex, "RuntimeError: Sync failed 7 times at 0xdead on /c/d.py, error code is 507015 (EZ1001)", re.I
    )
    assert not re.search(
        regex, "RuntimeError: Sync failed 7 times at 0xdead on /c/d.py, error code is 507033 (EZ1001)", re.I
    )


def test_lines_option_and_defaults(tmp_path, log, capsys):
    out_dir = tmp_path / "kb"
    code = main(
        [
            "kb",
            "new",
            "--from",
            str(log),
            "--lines",
            "7-7",
            "--out",
            str(out_dir),
            "--id",
            "qubit-sched",
            "--category",
            "segfault",
        ]
    )
    assert code == 0
    assert (out_dir / "segfault" / "qubit-sched.yaml").is_file()
    assert (
        main(
            [
                "kb",
                "new",
                "--from",
                str(log),
                "--lines",
                "7",
                "--out",
                str(out_dir),
                "--id",
                "qubit-sched",
                "--category",
                "segfault",
            ]
        )
        == 2
    )
    assert "already exists" in capsys.readouterr().err


def test_default_out_is_first_user_kb_dir(tmp_path, log, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("TRIAGE_KB_PATH", f"{first}:{second}")
    assert main(["kb", "new", "--from", str(log)]) == 0
    assert list(first.glob("*/*.yaml")) and not second.exists()


def test_log_without_errors_is_a_usage_error(tmp_path, capsys):
    healthy = tmp_path / "ok.log"
    healthy.write_text("step 1 | loss 2.0 | lr 1e-4\nstep 2 | loss 1.9 | lr 1e-4\n")
    assert main(["kb", "new", "--from", str(healthy), "--out", str(tmp_path / "kb")]) == 2
    assert "--lines" in capsys.readouterr().err


def test_lines_past_the_end_of_the_log_say_how_long_it_is(tmp_path, log, capsys):
    lines = len(log.read_bytes().splitlines())
    assert main(["kb", "new", "--from", str(log), "--lines", f"{lines + 5}-{lines + 9}", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"triage: --lines {lines + 5}-{lines + 9}: the log has {lines} lines"


def test_parse_range():
    assert parse_range("3-9") == (3, 9) and parse_range("4") == (4, 4)
    with pytest.raises(ScaffoldError):
        parse_range("9-3")


def test_unknown_error_is_a_draft_of_category_other(tmp_path, capsys):
    log = tmp_path / "frob.log"
    log.write_text("step 3 | loss 1.2 | lr 1e-4\n[rank0]: RuntimeError: frobnicator queue overflow on stage 3\n")
    assert main(["kb", "new", "--from", str(log), "--out", str(tmp_path / "kb")]) == 0
    data = yaml.safe_load(next((tmp_path / "kb").glob("*/*.yaml")).read_text())
    # "overflow" is a nan_loss_scale keyword, but no known failure matches: say so, don't guess.
    assert data["category"] == "other" and data["status"] == "draft"
    assert "unsure" in capsys.readouterr().out


def test_without_out_or_kb_path_it_writes_to_kb_local(tmp_path, log, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["kb", "new", "--from", str(log)]) == 0
    assert len(list((tmp_path / "kb-local").glob("*/*.yaml"))) == 1


def test_message_drops_a_date_without_time_as_a_prefix():
    assert message_of("[ERROR] 2026-01-01 MyError: pool exhausted") == "MyError: pool exhausted"
    assert message_of("2026-01-01T12:00:01.5 ERROR MyError: x") == "MyError: x"


def test_binary_data_is_refused_and_binary_lines_lend_no_words(tmp_path, capsys):
    noise = bytes(range(256)) * 40
    core = tmp_path / "core.bin"
    core.write_bytes(noise)
    assert main(["kb", "new", "--from", str(core), "--out", str(tmp_path / "kb")]) == 2
    assert capsys.readouterr().err.strip() == f"triage: {core}: binary data, not a text log; skipped"
    # In a text log, a binary line's chance words ("ERROR: out of memory" among its bytes) are no error line.
    chance = random.Random(7).randbytes(600).replace(b"\n", b" ")
    mixed = tmp_path / "mixed.log"
    mixed.write_bytes(b"step 1 loss 2.3\n" * 50 + chance[:300] + b" ERROR: out of memory " + chance[300:] + b"\n")
    assert main(["kb", "new", "--from", str(mixed), "--out", str(tmp_path / "kb")]) == 2
    assert "no error-like line" in capsys.readouterr().err


def test_lines_are_numbered_as_scan_numbers_them(tmp_path, capsys):
    # A progress bar redraws with bare CRs inside one line: scan's line 2 is kb new's line 2.
    log = tmp_path / "bar.log"
    log.write_bytes(b"training  10%\r training  20%\r training  30%\n" + LOG.splitlines()[6].encode() + b"\n")
    assert main(["kb", "new", "--from", str(log), "--lines", "2", "--out", str(tmp_path / "kb")]) == 0
    data = yaml.safe_load(next((tmp_path / "kb").glob("*/*.yaml")).read_text())
    assert data["examples"]["match"] == [LOG.splitlines()[6]]
