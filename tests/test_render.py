"""Human output of `triage scan`: prose and evidence fit the width (evidence cut at a word, with a
marker); code, commands and links are never wrapped or cut, so that they can be copied whole."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len

from tests.conftest import SAMPLES
from triage.cli.render import make_console, render_scan
from triage.render.layout import ELLIPSIS
from triage.results import EvidenceLine, FixResult, Stats, replace

ONE_ERROR_LOG = SAMPLES / "npu_oom-sft-fragmentation.log"


def rendered(result, *, width: int = 80, verbose: bool = False) -> str:
    out = io.StringIO()
    render_scan(result, make_console(out) if width == 80 else _console(out, width), verbose=verbose)
    return out.getvalue()


def _console(out: io.StringIO, width: int):
    from rich.console import Console

    return Console(file=out, width=width, highlight=False)


@pytest.fixture
def one_error(scan_text):
    # The source name and the timing are fixed so that the snapshot only changes with the layout.
    result = scan_text(ONE_ERROR_LOG.read_text(encoding="utf-8"), source=f"logs_samples/{ONE_ERROR_LOG.name}")
    return replace(result, stats=replace(result.stats, seconds=0.0))


def test_one_error_log_at_80_columns(one_error, snapshot, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # piped and no COLUMNS: 80
    text = rendered(one_error)
    lines = text.splitlines()
    assert len(lines) < 30
    assert all(cell_len(line) <= 80 for line in lines if line.strip() not in _code_lines(one_error))
    assert "1 diagnosis from 57 lines" in text
    assert text == snapshot


def _code_lines(result) -> set[str]:
    """Every row of code, command or link that the result's fixes and references hold."""
    rows = {f"$ {command}" for d in result.diagnoses for fix in d.fixes for command in fix.commands}
    rows |= {f"export {name}={value}" for d in result.diagnoses for fix in d.fixes for name, value in fix.env.items()}
    for fix in (fix for d in result.diagnoses for fix in d.fixes if fix.code is not None):
        rows |= {line.strip() for line in (fix.code.before + "\n" + fix.code.after).splitlines()}
    for fix in (fix for d in result.diagnoses for fix in d.fixes if fix.confirmed_by):
        more = f" (+{len(fix.confirmed_by) - 1} more)" if len(fix.confirmed_by) > 1 else ""
        rows.add(f"confirmed in {fix.confirmed_by[0]}{more}")
    return rows


def test_code_commands_and_links_are_shown_whole_however_narrow(one_error):
    # A cut or wrapped command cannot be pasted: each is one row, whole, past the width if it must be.
    text = rendered(one_error, width=40, verbose=True)
    rows = {line.strip() for line in text.splitlines()}
    diagnosis = one_error.diagnoses[0]
    wanted = {row for row in _code_lines(one_error) if row}
    wanted |= {f"see: {ref.url}" for ref in diagnosis.references if ref.url}
    assert any(len(row) > 40 for row in wanted)
    assert wanted <= rows, wanted - rows
    assert all(cell_len(line) <= 40 for line in text.splitlines() if line.strip() not in wanted)


def test_long_evidence_is_cut_at_a_word_with_an_ellipsis(one_error):
    evidence = one_error.diagnoses[0].evidence[0]
    text = rendered(one_error, width=60)
    shown = next(line.strip() for line in text.splitlines() if line.strip().startswith("RuntimeError"))
    kept = shown.removesuffix(ELLIPSIS).rstrip()
    assert shown.endswith(ELLIPSIS) and evidence.text.startswith(kept)
    assert evidence.text[len(kept)] == " ", "cut inside a word"


def test_long_path_keeps_its_line_number(one_error):
    diagnosis = one_error.diagnoses[0]
    line = replace(diagnosis.evidence[0], source="/very/long/" + "directory/" * 10 + "train.log")
    result = replace(one_error, diagnoses=[replace(diagnosis, evidence=[line])])
    assert any(
        row.strip().startswith(ELLIPSIS) and row.rstrip().endswith("train.log:56")
        for row in rendered(result).splitlines()
    )


def test_rank_and_role_only_when_known(one_error):
    diagnosis = one_error.diagnoses[0]
    role_only = rendered(replace(one_error, diagnoses=[replace(diagnosis, rank=None, role="root")]))
    assert "rank None" not in role_only and "\n   failed first\n" in role_only
    both = rendered(replace(one_error, diagnoses=[replace(diagnosis, rank=3, role="root")]))
    assert "rank 3 · failed first" in both
    neither = rendered(replace(one_error, diagnoses=[replace(diagnosis, rank=None, role=None)]))
    assert "rank" not in neither.split("evidence")[0]


def test_evidence_count_says_how_many_are_shown(one_error):
    diagnosis = one_error.diagnoses[0]
    lines = [EvidenceLine("a.log", n, f"error {n}") for n in range(1, 4)]
    text = rendered(replace(one_error, diagnoses=[replace(diagnosis, evidence=lines, evidence_count=4)]))
    assert "evidence (2 of 4 lines):" in text
    verbose = rendered(
        replace(one_error, diagnoses=[replace(diagnosis, evidence=lines, evidence_count=4)]), verbose=True
    )
    assert "evidence (3 of 4 lines):" in verbose and "a.log:3" in verbose


def test_verbose_adds_summary_and_every_cause(one_error):
    brief, verbose = rendered(one_error), rendered(one_error, verbose=True)
    causes = one_error.diagnoses[0].causes
    assert causes[1].title not in brief and causes[1].title in verbose
    assert "--verbose" in brief and "--verbose" not in verbose


def test_no_diagnosis_uses_singular_for_one_line():
    assert "in 1 line (" in rendered(replace_stats(lines=1))


def replace_stats(**changes):
    from triage.results import ScanResult

    return ScanResult(stats=Stats(**changes))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_color_is_honoured(one_error, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    coloured = _Terminal()
    render_scan(one_error, make_console(coloured))
    assert "\x1b[31m" in coloured.getvalue() or "\x1b[36m" in coloured.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    render_scan(one_error, make_console(plain))
    assert "\x1b[31m" not in plain.getvalue() and "\x1b[36m" not in plain.getvalue()


def test_piped_output_is_80_columns_unless_columns_is_set(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console(io.StringIO()).width == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert make_console(io.StringIO()).width == 132


def test_evidence_lines_show_the_message_not_the_launchers_prefix(scan_text, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    prefix = "(EngineCore_DP0 pid=13770) ERROR 02-25 03:11:49 [multiproc_executor.py:751] "
    result = scan_text(f"{prefix}RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    brief = rendered(result)
    assert "… RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB" in brief
    assert "EngineCore_DP0" not in brief
    # The whole line where everything is shown (and in --json).
    assert prefix.strip() in rendered(result, width=200, verbose=True)


def test_evidence_lines_show_a_build_error_not_its_directories(scan_text, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    directories = "/home/ci/runs/20260802_185212_manual_pr1099/payload/pto-isa/include/pto/common/"
    line = f"{directories}event.hpp:232:34: error: use of undeclared identifier 'PIPE_FIX'"
    result = scan_text(f"{line}\n1 error generated.\n")
    assert result.diagnoses
    brief = rendered(result)
    assert "…/event.hpp:232:34: error: use of undeclared identifier 'PIPE_FIX'" in brief
    assert "payload/pto-isa" not in brief
    assert directories in rendered(result, width=300, verbose=True)


def test_brief_output_tells_a_fix_that_has_nothing_to_run(one_error):
    # A fix of only words (what fixed a similar reported failure) would otherwise read as a bare
    # heading; a fix with commands or code keeps its description for --verbose.
    from triage.results import FixResult

    told = FixResult(
        title="What fixed the similar reported failure",
        description="Remove the override from the launch script.",
        confirmed_by=["https://github.com/example/repo/issues/1"],
    )
    diagnosis = one_error.diagnoses[0]
    runnable = next(fix for fix in diagnosis.fixes if fix.commands or fix.env or fix.code)
    result = replace(one_error, diagnoses=[replace(diagnosis, fixes=[told, runnable])])
    text = " ".join(rendered(result, width=200).split())
    assert "Remove the override from the launch script." in text
    assert "confirmed in https://github.com/example/repo/issues/1" in text
    assert runnable.description and " ".join(runnable.description.split())[:60] not in text


def test_a_link_is_shown_to_open_and_a_command_to_run(one_error):
    diagnosis = one_error.diagnoses[0]
    search = "https://github.com/search?type=issues&q=%22npu+out+of+memory%22"
    fix = FixResult("Search the trackers", commands=[search, "npu-smi info"], kind="diagnostic")
    rows = [
        row.strip() for row in rendered(replace(one_error, diagnoses=[replace(diagnosis, fixes=[fix])])).splitlines()
    ]
    assert search in rows and f"$ {search}" not in rows and "$ npu-smi info" in rows
