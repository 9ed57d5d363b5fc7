"""The triage app: ranked causes, their details and the log.

The app keeps the screen. What it drives does the work: a `LogLoader` (the KB, reading and
following the logs, in a thread worker), a `ProbeSession` (probes and the re-ranking they make) and
a `ReportExport`. Workers never touch widgets: they post messages (triage.tui.messages) and the
handlers here own every state change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static
from textual.worker import Worker, WorkerState, get_current_worker

from triage.render.parts import probe_verdict
from triage.report import fix_text
from triage.results import Diagnosis, ScanResult
from triage.sources import display_name
from triage.tui.exporting import ReportExport
from triage.tui.loading import LogLoader
from triage.tui.messages import (
    EvidenceChosen,
    LogLinesRead,
    ProbeProgress,
    ProblemFound,
    ProbesFinished,
    ScanUpdated,
    SearchClosed,
)
from triage.tui.probes import ProbeRunner, ProbeSession, default_probe_runner
from triage.tui.screens.export import ExportScreen, free_path
from triage.tui.screens.help import HelpScreen, key_rows
from triage.tui.widgets.detail import DetailPane, EvidenceList
from triage.tui.widgets.diagnoses import DiagnosisList
from triage.tui.widgets.lists import KeyedList
from triage.tui.widgets.log_view import LogView
from triage.tui.widgets.probe_status import ProbeStatus
from triage.tui.widgets.search_bar import SearchBar

DARK, LIGHT = "textual-dark", "textual-light"


class TriageApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "triage"

    # The footer shows the short descriptions; the help screen shows the tooltips.
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="Quit triage"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="Show this help"),
        Binding("c", "copy_fix", "Copy fix", tooltip="Copy the selected fix (env, commands, code) to the clipboard"),
        Binding("left_square_bracket", "choose_fix(-1)", "Previous fix", show=False, key_display="["),
        Binding("right_square_bracket", "choose_fix(1)", "Next fix", show=False, key_display="]"),
        Binding("p", "run_probes", "Probe", tooltip="Run the live probes of the selected cause and re-rank"),
        Binding("e", "export", "Export", tooltip="Copy a markdown report for an issue and write it where you say"),
        Binding("r", "toggle_redact", "Redact", show=False, tooltip="Mask paths, hosts and IPs in exports (on/off)"),
        Binding("slash", "search", "Search", key_display="/", tooltip="Search the log"),
        Binding(
            "n",
            "next_hit(True)",
            "Next evidence",
            tooltip="Next evidence line of the selected cause (after /: next search hit)",
        ),
        Binding(
            "N",
            "next_hit(False)",
            "Previous evidence",
            show=False,
            key_display="N",
            tooltip="Previous evidence line (after /: previous hit)",
        ),
        Binding("f", "toggle_filter", "Filter", tooltip="Show only matched lines in the log (on/off)"),
        Binding("b", "back", "Back", show=False, tooltip="Back from the log to where you jumped from"),
        Binding("t", "toggle_theme", "Theme", show=False, tooltip="Switch between the light and dark theme"),
    ]

    def __init__(
        self,
        paths: list[str],
        *,
        kb_dirs: list[str] | None = None,
        include_shipped_kb: bool = True,
        follow: bool = False,
        stdin_data: bytes | None = None,
        probe_runner: ProbeRunner = default_probe_runner,
        redact: bool = False,
        report_path: Path = Path("triage-report.md"),
    ) -> None:
        super().__init__()
        self.paths = paths
        self.follow = follow
        self.report_path = report_path
        self.loader = LogLoader(
            paths,
            self.post_message,
            kb_dirs=kb_dirs or [],
            include_shipped_kb=include_shipped_kb,
            follow=follow,
            stdin_data=stdin_data,
        )
        self.probes = ProbeSession(probe_runner)
        self.export = ReportExport(paths, redact=redact)
        self.scan_result = ScanResult()
        """The scanner's own ranking; `result` adds what the probes found."""
        self.result = ScanResult()
        self.scan_done = False
        self.line_count = 0
        self._jump_origin: Any = None
        self._evidence_of: str | None = None
        """The diagnosis whose evidence the log marks."""
        self.theme = DARK

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal(id="panes"):
            yield DiagnosisList(id="diagnoses")
            yield DetailPane(id="detail")
        with Vertical(id="log-pane"):
            yield LogView(show_source=len(self.paths) > 1, follow=self.follow, id="log")
            yield SearchBar(placeholder="search the log (enter: find, escape: cancel)", id="search")
        yield ProbeStatus(id="probes")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diagnoses").border_title = "Causes"
        self.query_one("#detail").border_title = "Details"
        self.query_one("#log").border_title = "Log"
        self.query_one(DetailPane).show(None, [], empty="Reading…")
        self._update_status()
        self.query_one(DiagnosisList).focus()
        self._read_logs()

    # -- workers: they only post messages ----------------------------------------------------------

    @work(thread=True, exclusive=True, group="feed", exit_on_error=False)
    def _read_logs(self) -> None:
        worker = get_current_worker()
        self.loader.run(cancelled=lambda: worker.is_cancelled)

    @work(thread=True, exclusive=True, group="probes", exit_on_error=False)
    def _run_probes(self, diagnosis_id: str, probes: list[str]) -> None:
        self.probes.run(diagnosis_id, probes, self.post_message)

    # -- message handlers: all state changes happen here -------------------------------------------

    def on_log_lines_read(self, message: LogLinesRead) -> None:
        self.line_count += len(message.batch.lines)
        self.query_one(LogView).add_batch(message.batch)

    def on_scan_updated(self, message: ScanUpdated) -> None:
        known = {d.id for d in self.scan_result.diagnoses}
        if self.scan_done:
            # Only what arrives after the first full read is news; the first ranking is the screen itself.
            for diagnosis in message.result.diagnoses:
                if diagnosis.id not in known:
                    self.notify(diagnosis.title, title="New diagnosis", severity="warning")
        self.scan_result = message.result
        self.scan_done = self.scan_done or message.done
        self._rerank()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Workers run with exit_on_error=False so that a bad log or probe cannot take the UI down;
        # their failures must still be seen.
        if event.state == WorkerState.ERROR:
            self.notify(f"{event.worker.error}", title=f"{event.worker.group} failed", severity="error", timeout=10)

    def on_problem_found(self, message: ProblemFound) -> None:
        self.notify(message.text, severity="error", timeout=8)

    def on_probe_progress(self, message: ProbeProgress) -> None:
        text = f"probe {message.done + 1}/{message.total}: running {message.probe}…"
        self.query_one(ProbeStatus).running(text, message.done, message.total)

    def on_probes_finished(self, message: ProbesFinished) -> None:
        self.probes.record(message.results)
        self._rerank()
        outcomes = [f"{r.get('probe', '?')}: {probe_verdict(r)}" for r in message.results] + message.errors
        position = next((n for n, d in enumerate(self.result.diagnoses, 1) if d.id == message.diagnosis_id), None)
        summary = "; ".join(outcomes) + (f" · now ranked #{position}" if position and message.results else "")
        self.query_one(ProbeStatus).finished(summary)
        for error in message.errors:
            self.notify(error, title="Probe failed", severity="error")

    @on(OptionList.OptionHighlighted, "#diagnoses")
    def _diagnosis_highlighted(self) -> None:
        self._show_detail()

    @on(OptionList.OptionSelected, "#diagnoses")
    def _diagnosis_selected(self) -> None:
        self.query_one(EvidenceList).focus()

    def on_evidence_chosen(self, message: EvidenceChosen) -> None:
        log = self.query_one(LogView)
        self._jump_origin = self.focused
        if log.jump_to((message.line.source, message.line.line)):
            log.focus()
        else:
            self.notify("That line is no longer held in the log view", severity="warning")

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self._close_search()
        if event.value:
            self._search(event.value, forward=True)

    def on_search_closed(self, _: SearchClosed) -> None:
        self._close_search()

    # -- actions -----------------------------------------------------------------------------------

    def action_help(self) -> None:
        sections = [
            ("Everywhere", key_rows(self.BINDINGS)),
            ("Log", key_rows(LogView.BINDINGS)),
            (
                "Moving",
                key_rows(Screen.BINDINGS)
                + [("up, down, enter", "Move and select in a list")]
                + key_rows(KeyedList.BINDINGS),
            ),
        ]
        self.push_screen(HelpScreen(sections))

    def action_copy_fix(self) -> None:
        fix = self.query_one(DetailPane).selected_fix
        if fix is None:
            self.notify("The selected diagnosis has no fix to copy", severity="warning")
            return
        text = fix_text(fix) or fix.title
        self.copy_to_clipboard(text)
        self.notify(f"{fix.title}\n{text.splitlines()[0]}", title="Copied fix")

    def action_choose_fix(self, delta: int) -> None:
        self.query_one(DetailPane).select_fix(delta)

    def action_run_probes(self) -> None:
        diagnosis = self.selected_diagnosis
        if diagnosis is None:
            self.notify("No diagnosis selected", severity="warning")
        elif not diagnosis.probes:
            self.notify(f"No probe can check “{diagnosis.title}”", severity="warning")
        else:
            self.query_one(ProbeStatus).running(f"starting {', '.join(diagnosis.probes)}…", 0, len(diagnosis.probes))
            self._run_probes(diagnosis.id, list(diagnosis.probes))

    def action_export(self) -> None:
        report = self.export.build(self.result)
        self.copy_to_clipboard(report)

        def write(path: Path | None) -> None:
            text, failed = self.export.write(report, path)
            self.notify(text, title="Report", severity="error" if failed else "information")

        self.push_screen(ExportScreen(free_path(self.report_path), self.export.kind), write)

    def action_toggle_redact(self) -> None:
        self.export.redact = not self.export.redact
        self.notify(f"Redaction of paths, hosts and IPs in exports is {'on' if self.export.redact else 'off'}")
        self._update_status()

    def action_search(self) -> None:
        self.query_one(SearchBar).open()

    def action_next_hit(self, forward: bool) -> None:
        log = self.query_one(LogView)
        if log.search_term:
            self._search(log.search_term, forward=forward)
        elif log.next_evidence(forward=forward):
            log.focus()
        else:
            self.notify("The selected cause has no evidence line in the log", severity="warning")

    def action_toggle_filter(self) -> None:
        log = self.query_one(LogView)
        log.filtered = not log.filtered
        log.border_title = "Log: matched lines only (f: all)" if log.filtered else "Log"
        self._update_status()

    async def action_back(self) -> None:
        if self._jump_origin is not None:
            self._jump_origin.focus()
            self._jump_origin = None

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT if self.theme == DARK else DARK
        self.query_one(DetailPane).dark = self.theme == DARK
        self._show_detail()

    # -- helpers -----------------------------------------------------------------------------------

    @property
    def selected_diagnosis(self) -> Diagnosis | None:
        selected = self.query_one(DiagnosisList).selected_key
        return next((d for d in self.result.diagnoses if d.key == selected), None)

    def _rerank(self) -> None:
        self.result = self.probes.rerank(self.scan_result)
        self.query_one(DiagnosisList).show(self.result.diagnoses)
        self.query_one(LogView).set_matched({(e.source, e.line) for d in self.result.diagnoses for e in d.evidence})
        self._show_detail()
        self._update_status()

    def _show_detail(self) -> None:
        if self.result.diagnoses:
            empty = ""
        elif self.scan_done:
            empty = f"No known failure found in {self.line_count:,} lines."
        else:
            empty = "Reading…"
        selected = self.selected_diagnosis
        self.query_one(DetailPane).show(
            selected, list(self.probes.results.values()), empty=empty, context=self.result.context
        )
        # A newly selected cause brings its first evidence line into view; a re-ranking only re-marks.
        evidence = [(line.source, line.line) for line in selected.evidence] if selected else []
        chosen = selected.key if selected else None
        self.query_one(LogView).show_evidence(evidence, jump=chosen != self._evidence_of)
        self._evidence_of = chosen

    def _update_status(self) -> None:
        names = ", ".join(Path(display_name(p)).name for p in self.paths) or "no input"
        state = "following" if self.follow else ("done" if self.scan_done else "reading")
        parts = [
            names,
            f"{self.line_count:,} lines",
            f"{len(self.result.diagnoses)} cause{'' if len(self.result.diagnoses) == 1 else 's'}",
            state,
        ]
        if self.query_one(LogView).filtered:
            parts.append("filter on")
        if self.export.redact:
            parts.append("redact on")
        self.query_one("#status", Static).update(" · ".join(parts))

    def _search(self, term: str, *, forward: bool) -> None:
        log = self.query_one(LogView)
        if log.search(term, forward=forward):
            log.focus()
        else:
            self.notify(f"“{term}” not found", severity="warning")

    def _close_search(self) -> None:
        self.query_one(SearchBar).close()
        self.query_one(LogView).focus()

    def on_unmount(self) -> None:
        # The loader waits between polls; stop it so quitting never waits a poll.
        self.loader.stop()
