"""The main flows of `triage tui`, driven by keys through Textual's pilot against the fixture KB."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets import Label

from tui_support import ROOT, TRAIN_LOG, make_app, settle
from triage.tui.screens.help import HelpScreen
from triage.tui.widgets.detail import DetailPane, EvidenceList
from triage.tui.widgets.diagnoses import DiagnosisList
from triage.tui.widgets.log_view import LogView
from triage.tui.widgets.probe_status import ProbeStatus

OOM_LINE = (
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; "
    "20.13 GiB already allocated; 1.01 GiB free; 50.61 GiB reserved in total by PyTorch)\n"
)


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_opens_log_ranks_causes_and_marks_lines():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        # The OOM came first; the later HCCL timeout on rank 1 is its knock-on effect and ranks last.
        assert [d.id for d in app.result.diagnoses] == ["tui-npu-oom", "tui-unsupported-op", "tui-hccl-timeout"]
        assert app.query_one(DiagnosisList).selected_id == "tui-npu-oom"
        assert app.query_one(DetailPane).diagnosis.id == "tui-npu-oom"
        log = app.query_one(LogView)
        assert len(log.lines) == 14
        assert log.matched == {(TRAIN_LOG, 4), (TRAIN_LOG, 12), (TRAIN_LOG, 13)}


async def test_copy_selected_fix():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("down", "down")
        assert app.selected_diagnosis.id == "tui-hccl-timeout"
        # Fixes come in the order of the causes they address: the likelier cause first.
        await pilot.press("c")
        assert app.clipboard == "grep -l Traceback rank_*.log"
        await pilot.press("right_square_bracket", "c")
        assert app.clipboard == "export HCCL_EXEC_TIMEOUT=1800"
        assert any("export HCCL_EXEC_TIMEOUT=1800" in note for note in notifications(app))


async def test_probe_confirms_a_cause_and_reranks():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        assert app.selected_diagnosis.id == "tui-npu-oom"
        await pilot.press("p")
        await settle(pilot)
        top = app.result.diagnoses[0]
        assert top.id == "tui-npu-oom"
        assert top.causes[0].id == "fragmentation"
        assert app.query_one(DiagnosisList).selected_id == "tui-npu-oom"
        status = str(app.query_one(ProbeStatus).query_one(Label).render())
        assert "allocator: finding" in status and "#1" in status


async def test_missing_probe_runner_is_reported_not_fatal(monkeypatch):
    from triage.tui.probes import default_probe_runner

    monkeypatch.setitem(sys.modules, "triage.probing.runner", None)  # import fails as on a branch without it
    app = make_app(probe_runner=default_probe_runner)
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert "probe runner unavailable" in notifications(app)
        assert app.is_running


async def test_export_redacted_report(tmp_path: Path):
    report = tmp_path / "report.md"
    app = make_app(report_path=report)
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("r", "e")
        text = report.read_text()
        assert app.clipboard == text
        assert "## 1. NPU out of memory" in text and "HCCL collective timed out" in text
        assert "export HCCL_EXEC_TIMEOUT=1800" in text
        assert "10.20.30.41" not in text and "<ip>" in text
        assert "## Environment" in text


async def test_search_and_filter():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        log = app.query_one(LogView)
        await pilot.press("slash", *"step", "enter")
        assert log.current.number == 3 and app.focused is log
        await pilot.press("n")
        assert log.current.number == 5
        await pilot.press("N")
        assert log.current.number == 3
        await pilot.press("f")
        assert [log.visible_line(row).number for row in range(log.visible_count)] == [4, 12, 13]
        await pilot.press("f")
        assert log.visible_count == 14


async def test_jump_from_evidence_to_line_and_back():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the top diagnosis (the OOM) is selected: go to its evidence
        assert isinstance(app.focused, EvidenceList)
        await pilot.press("enter")
        log = app.query_one(LogView)
        assert app.focused is log and log.current.number == 12
        await pilot.press("b")
        assert isinstance(app.focused, EvidenceList)


async def test_help_theme_and_quit():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("t")
        assert app.theme == "textual-light"
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_stdin_data_is_scanned():
    app = make_app(["-"], stdin_data=OOM_LINE.encode())
    async with app.run_test() as pilot:
        await settle(pilot)
        assert [d.id for d in app.result.diagnoses] == ["tui-npu-oom"]
        assert app.query_one(LogView).lines[0].source == "<stdin>"


async def test_follow_streams_new_lines_and_diagnoses(tmp_path: Path):
    log_file = tmp_path / "live.log"
    log_file.write_text("step 1 | loss 2.31\n")
    app = make_app([str(log_file)], follow=True)
    async with app.run_test() as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.scan_done:
                break
        assert app.result.diagnoses == []
        with log_file.open("a") as handle:
            handle.write(OOM_LINE)
        for _ in range(60):
            await pilot.pause(0.05)
            if app.result.diagnoses:
                break
        assert [d.id for d in app.result.diagnoses] == ["tui-npu-oom"]
        assert len(app.query_one(LogView).lines) == 2
        assert "New diagnosis" in [n.title for n in app._notifications]


async def test_worker_failure_is_shown(monkeypatch):
    import triage.tui.app as app_module

    def broken_kb(*_args, **_kwargs):
        raise RuntimeError("KB exploded")

    monkeypatch.setattr(app_module, "load_engine_kb", broken_kb)
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        assert "KB exploded" in notifications(app)
        assert app.is_running
