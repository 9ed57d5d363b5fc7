"""The KB's measured accuracy: the targets of the knowledge-base issue, checked on every run."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, SAMPLES
from triage.kbtools.evaluate import evaluate, load_cases

SHARED_LOGS = ROOT.parent / "shared" / "logs" / "dev"
TOP1, TOP3 = 0.90, 0.97


def test_samples_accuracy_and_no_false_alarms(engine_kb):
    report = evaluate(engine_kb, load_cases(SAMPLES))
    summary = report.summary()
    assert summary["cases"] >= 30 and summary["healthy_logs"] >= 6
    assert summary["top1"] >= TOP1 and summary["top3"] >= TOP3, report.by_category()
    assert summary["false_alarms"] == 0
    wrong_top = [o.case.file.name for o in report.labelled if o.predicted and o.predicted[0][0] != o.case.top]
    assert not wrong_top, f"expected top entry missed on {wrong_top}"


@pytest.mark.skipif(
    not (SHARED_LOGS / "cases.yaml").is_file(), reason="the shared real-log set is not beside the project"
)
def test_real_logs_accuracy(engine_kb):
    summary = evaluate(engine_kb, load_cases(SHARED_LOGS)).summary()
    assert summary["top1"] >= TOP1 and summary["top3"] >= TOP3, summary


def test_eval_reports_unreadable_labelled_logs(tmp_path):
    import subprocess
    import sys

    (tmp_path / "labels.yaml").write_text("- {file: missing.log, category: null, healthy: true}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "triage", "eval", str(tmp_path)], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 2 and "missing.log: no such file" in proc.stderr
