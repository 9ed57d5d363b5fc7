"""What an entry says about itself reaches every output: a draft says it ranks lower, related entries are listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from triage.cli.main import main
from triage.report import build_report
from triage.results import Diagnosis, ScanResult
from triage.tui.widgets.detail import DetailPane

DRAFT = """\
id: ez1234-tiling
title: aclnnFooGrad tiling exceeds the block limit
category: other
status: draft
summary: TODO
signatures:
  - regex: 'aclnnFooGrad failed: tiling'
    weight: 2.0
related: [npu-out-of-memory]
fixes:
  - title: Split the batch so the tiling fits
    confirmed_by: [https://github.com/example/repo/issues/1]
"""


@pytest.fixture
def scanned(tmp_path: Path, capsys) -> tuple[Path, Path]:
    kb = tmp_path / "kb"
    (kb / "other").mkdir(parents=True)
    (kb / "other" / "ez1234-tiling.yaml").write_text(DRAFT)
    log = tmp_path / "x.log"
    log.write_text("step 1\nRuntimeError: aclnnFooGrad failed: tiling of shape [8, 4096] exceeds 65535 blocks\n")
    capsys.readouterr()
    return kb, log


def test_json_carries_status_and_related(scanned, capsys):
    kb, log = scanned
    assert main(["scan", "--json", "--no-shipped-kb", "--kb", str(kb), str(log)]) == 1
    (diagnosis,) = json.loads(capsys.readouterr().out)["diagnoses"]
    assert (diagnosis["status"], diagnosis["related"]) == ("draft", ["npu-out-of-memory"])
    assert diagnosis["fixes"][0]["confirmed_by"] == ["https://github.com/example/repo/issues/1"]


def test_report_and_verbose_output_cite_where_a_fix_was_confirmed(scanned, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    kb, log = scanned
    main(["scan", "--verbose", "--no-shipped-kb", "--kb", str(kb), str(log)])
    assert "confirmed in https://github.com/example/repo/issues/1" in capsys.readouterr().out
    report = kb.parent / "report.md"
    main(["scan", "--no-shipped-kb", "--kb", str(kb), "--report", str(report), str(log)])
    assert "Confirmed in: https://github.com/example/repo/issues/1" in report.read_text()


def test_human_output_says_a_draft_ranks_lower(scanned, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    kb, log = scanned
    main(["scan", "--no-shipped-kb", "--kb", str(kb), str(log)])
    assert "draft entry, ranked lower" in capsys.readouterr().out


def test_report_and_tui_detail_list_related_entries():
    diagnosis = Diagnosis(
        id="a",
        category="other",
        title="A",
        severity="error",
        confidence=0.5,
        score=1.0,
        status="draft",
        related=["b", "c"],
    )
    report = build_report(ScanResult(diagnoses=[diagnosis]), sources=["x.log"], environment={})
    assert "**Related entries:** `b`, `c`" in report and "draft entry, ranked lower" in report
    console = Console(width=100, record=True)
    console.print(DetailPane()._body(diagnosis))
    assert "Related entries b, c" in console.export_text()
