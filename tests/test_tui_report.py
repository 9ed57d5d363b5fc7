"""The issue report and its redaction: pure functions that `triage scan` can reuse without textual."""

from __future__ import annotations

import subprocess
import sys

import pytest

from triage.redact import Redactor
from triage.report import build_report, fix_text
from triage.results import Diagnosis, EvidenceLine, FixResult, ReferenceResult, ScanResult
from tui_support import ROOT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ckpt at /home/alice/ckpt/model.pt", "ckpt at <path>/model.pt"),  # keeps the file name
        ("peer 10.20.30.41:6000 timed out", "peer <ip> timed out"),
        ("host worker-7.cluster.local up", "host <host> up"),
        ("addr fe80::1:2:3 down", "addr <ip> down"),
        ("at 10:00:01 in c10::Error", "at 10:00:01 in c10::Error"),  # clock times and C++ scopes survive
        ("in torch_npu.npu.utils.synchronize", "in torch_npu.npu.utils.synchronize"),  # module path survives
        ("loss 1/2 at step 3", "loss 1/2 at step 3"),
    ],
)
def test_redact(text, expected):
    assert Redactor()(text) == expected


def test_redact_names_the_local_host():
    assert Redactor(hosts={"gpu-node-17"})("node gpu-node-17 died") == "node <host> died"


def _result() -> ScanResult:
    fix = FixResult(title="Raise the timeout", env={"HCCL_EXEC_TIMEOUT": "1800"}, commands=["npu-smi info"])
    diagnosis = Diagnosis(
        id="x-timeout",
        category="hccl_timeout",
        title="HCCL timed out",
        severity="critical",
        confidence=0.7,
        score=1.0,
        evidence=[EvidenceLine(source="/data/job/rank1.log", line=13, text="timeout on 10.0.0.8")],
        evidence_count=1,
        fixes=[fix],
        references=[ReferenceResult(url="https://example.org/a/b", supports="HCCL_EXEC_TIMEOUT")],
    )
    return ScanResult(diagnoses=[diagnosis])


def test_report_sections_and_redaction():
    environment = {"host": "box-1", "ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit"}
    plain = build_report(_result(), sources=["/data/job/rank1.log"], environment=environment)
    assert "/data/job/rank1.log:13: timeout on 10.0.0.8" in plain
    hidden = build_report(_result(), sources=["/data/job/rank1.log"], environment=environment, redacted=True)
    assert "<path>/rank1.log:13: timeout on <ip>" in hidden
    assert "box-1" not in hidden and "/usr/local" not in hidden
    assert "https://example.org/a/b" in hidden  # KB text is never redacted
    assert "export HCCL_EXEC_TIMEOUT=1800" in hidden


def test_fix_text_is_what_a_shell_takes():
    fix = FixResult(title="t", env={"A": "1"}, commands=["npu-smi info"])
    assert fix_text(fix) == "export A=1\nnpu-smi info"


def test_scan_and_report_never_import_textual():
    code = (
        "import sys, triage.report, triage.cli.main as m; m.build_parser(); "
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'textual' or n.startswith('triage.tui')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_report_counts_in_words_a_reader_expects():
    result = _result()
    result.stats.lines = 1
    text = build_report(result, sources=["/data/job/rank1.log"], environment={})
    assert "Scanned 1 line; 1 diagnosis." in text and "**Evidence** (1 line):" in text
