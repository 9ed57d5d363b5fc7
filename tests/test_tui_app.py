"""The main flows of `triage tui`, driven by keys through Textual's pilot against the fixture KB."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets import Input, Label

from tui_support import ROOT, TRAIN_LOG, make_app, settle
from triage.render.parts import probe_verdict
from triage.tui.screens.export import ExportScreen
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
        assert app.query_one(DiagnosisList).selected_key == "tui-npu-oom"
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
        assert app.query_one(DiagnosisList).selected_key == "tui-npu-oom"
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
        assert isinstance(app.screen, ExportScreen) and not report.exists()  # asks first
        await pilot.press("enter")
        await pilot.pause()
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
    import triage.tui.loading as loading

    def broken_kb(*_args, **_kwargs):
        raise RuntimeError("KB exploded")

    monkeypatch.setattr(loading, "load_reported_kb", broken_kb)
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        assert "KB exploded" in notifications(app)
        assert app.is_running


async def test_export_never_overwrites_silently(tmp_path: Path):
    report = tmp_path / "report.md"
    report.write_text("an earlier report")
    app = make_app(report_path=report)
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("e")
        path_input = app.screen.query_one(Input)
        assert path_input.value == str(tmp_path / "report-2.md")  # a free name is suggested
        path_input.value = str(report)
        await pilot.press("enter")
        await pilot.pause()
        assert report.read_text() == "an earlier report" and isinstance(app.screen, ExportScreen)
        assert "exists" in str(app.screen.query_one("#export-hint", Label).render())
        await pilot.press("enter")  # the second enter on the same path replaces it
        await pilot.pause()
        assert report.read_text().startswith("#")
        await pilot.press("e", "escape")
        await pilot.pause()
        assert not (tmp_path / "report-2.md").exists()


def visible_rows(log: LogView) -> range:
    return range(round(log.scroll_y), round(log.scroll_y) + log.size.height)


async def test_selecting_the_second_cause_shows_its_first_evidence_line():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        log = app.query_one(LogView)
        assert log.cursor in visible_rows(log) and log.current.number == app.result.diagnoses[0].evidence[0].line
        await pilot.press("down")
        second = app.result.diagnoses[1]
        assert app.selected_diagnosis.id == second.id
        first = second.evidence[0]
        row = next(r for r in range(log.visible_count) if log.visible_line(r).key == (first.source, first.line))
        assert row in visible_rows(log) and log.cursor == row
        assert log.evidence == [(e.source, e.line) for e in second.evidence]


async def test_j_and_k_move_in_the_focused_list():
    app = make_app()
    async with app.run_test() as pilot:
        await settle(pilot)
        ids = [d.id for d in app.result.diagnoses]
        await pilot.press("j", "j")
        assert app.selected_diagnosis.id == ids[2]
        await pilot.press("k")
        assert app.selected_diagnosis.id == ids[1]


async def test_the_safety_nets_runners_up_are_each_listed_and_shown():
    # Each family that came close is a guess of one shared id: the list keys them by family too (a
    # second runner-up used to stop the app with a duplicate-id error).
    from textual.app import App, ComposeResult

    from triage.results import Diagnosis

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield DiagnosisList(id="diagnoses")

    guesses = [
        Diagnosis(
            id=name, category=category, title="Unrecognised X", severity="error", confidence=0.2, score=0.2, guess=True
        )
        for name, category in (
            ("unrecognised-error", "segfault"),
            ("unrecognised-error-alternative", "npu_oom"),
            ("unrecognised-error-alternative", "env_version"),
        )
    ]
    async with Host().run_test() as pilot:
        listed = pilot.app.query_one(DiagnosisList)
        listed.show(guesses)
        listed.highlighted = 2
        await pilot.pause()
        assert listed.option_count == 3 and listed.selected_key == guesses[2].key
        listed.show(list(reversed(guesses)))  # re-ranked: the highlighted one stays highlighted
        await pilot.pause()
        assert listed.selected_key == guesses[2].key and listed.highlighted == 0


async def test_n_and_shift_n_visit_the_evidence_lines(tmp_path: Path):
    log_file = tmp_path / "two.log"
    log_file.write_text("step 1 | loss 2.31\n" + OOM_LINE + "step 2 | loss 2.30\nstep 3 | loss 2.29\n" + OOM_LINE)
    app = make_app([str(log_file)])
    async with app.run_test() as pilot:
        await settle(pilot)
        log = app.query_one(LogView)
        assert log.current.number == 2  # the first evidence line of the selected cause
        await pilot.press("n")
        assert log.current.number == 5 and app.focused is log
        await pilot.press("n")
        assert log.current.number == 2  # wraps around
        await pilot.press("N")
        assert log.current.number == 5


@pytest.mark.parametrize(
    ("result", "verdict"),
    [
        ({"status": "finding", "findings": [{"message": "x", "confirms": ["fragmentation"]}]}, "finding"),
        ({"status": "ok", "findings": [{"message": "fine", "rules_out": ["fragmentation"]}]}, "ok"),
        (
            {
                "status": "ok",
                "device": {"type": "cpu"},
                "findings": [{"id": "allocator-unsupported", "message": "cpu: no caching allocator"}],
            },
            "inconclusive here: confirms or rules out no cause (cpu: no caching allocator)",
        ),
        (
            {"status": "ok", "device": {"type": "cpu"}, "findings": []},
            "inconclusive here: confirms or rules out no cause (no finding on cpu)",
        ),
        ({"status": "skipped", "reason": "torch is not installed"}, "inconclusive here: torch is not installed"),
        ({"status": "error", "reason": "bad option"}, "error: bad option"),
    ],
)
def test_probe_verdict(result, verdict):
    assert probe_verdict(result) == verdict
