"""Logs that repeat one another (`triage.kbtools.twins`), and scripts/corpus_import.py run for real on a
corpus of its own: the split it gives, and the twins it skips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT
from triage.kbtools.twins import LogIndex, telling_lines

ERROR = "RuntimeError: No backend type associated with device type cpu (ProcessGroup.cpp:112)"
FRAME = '  File "/usr/lib/python3.10/site-packages/torch/distributed/c10d.py", line 3, in all_reduce'


def test_a_log_that_repeats_another_is_its_twin(tmp_path):
    logs = {
        "issue": [FRAME, ERROR],
        "fix-pr": ["Traceback (most recent call last):", FRAME, ERROR],
        "same-stack-other-error": [FRAME, "ValueError: the learning rate schedule needs a warm-up of 100 steps"],
        "unrelated": ["ValueError: the learning rate schedule needs a warm-up of 100 steps, got 10 in config"],
    }
    for name, text in logs.items():
        (tmp_path / name).write_text("\n".join(text) + "\n")
    lines = {name: telling_lines(tmp_path / name) for name in logs}
    index = LogIndex(lines.items())
    assert index.twin("issue", lines["issue"]) == "fix-pr"
    # Frames of one stack are no twin without the error line: another failure raised from the same place.
    assert index.twin("same-stack-other-error", lines["same-stack-other-error"]) is None
    assert index.twin("unrelated", lines["unrelated"]) is None


def _mined(folder: Path, cases: dict[str, list[str]]) -> Path:
    (folder / "logs").mkdir(parents=True)
    rows = []
    for name, lines in cases.items():
        (folder / "logs" / f"{name}.log").write_text("\n".join(lines) + "\n")
        rows.append(
            {
                "id": name,
                "source": f"https://github.com/example/project/issues/{name}",
                "category": "other",
                "root_cause": "unknown",
                "fix": "unknown",
                "fix_confirmed": False,
                "cause_terms": [],
                "fix_terms": [],
                "workload": "training",
                "log_file": f"{name}.log",
            }
        )
    (folder / "cases.yaml").write_text(yaml.safe_dump(rows))
    return folder


def _import(corpus: Path, *mined: Path) -> subprocess.CompletedProcess[str]:
    script = ROOT / "scripts" / "corpus_import.py"
    command = [sys.executable, str(script), *map(str, mined), "--corpus", str(corpus)]
    return subprocess.run(command, capture_output=True, text=True, check=True)


def test_a_mined_log_that_repeats_a_case_is_skipped_and_the_rest_get_a_split(tmp_path):
    corpus = tmp_path / "corpus"
    first = _mined(tmp_path / "first", {"issue": [FRAME, ERROR]})
    assert "added 1" in _import(corpus, first).stdout
    later = _mined(
        tmp_path / "later",
        {
            "fix-pr": ["Traceback (most recent call last):", FRAME, ERROR],
            "other-failure": [FRAME, "ValueError: bad lr"],
        },
    )
    out = _import(corpus, later).stdout
    assert "skipped fix-pr: its log repeats that of issue" in out and "added 1" in out
    cases = yaml.safe_load((corpus / "cases.yaml").read_text())
    assert {c["id"] for c in cases} == {"issue", "other-failure"}
    assert all(c["split"] in ("train", "test") and (corpus / "logs" / c["log_file"]).is_file() for c in cases)
