"""The markdown report the app copies and writes: what it holds and how writing it went."""

from __future__ import annotations

from pathlib import Path

from triage.report import build_report, collect_environment
from triage.results import ScanResult
from triage.sources import display_name


class ReportExport:
    def __init__(self, paths: list[str], *, redact: bool) -> None:
        self._sources = [display_name(path) for path in paths]
        self.redact = redact
        """Masks secrets, paths, hosts and IPs in the report; the app toggles it."""

    @property
    def kind(self) -> str:
        return "redacted" if self.redact else "not redacted; r toggles"

    def build(self, result: ScanResult) -> str:
        return build_report(result, sources=self._sources, environment=collect_environment(), redacted=self.redact)

    def write(self, report: str, path: Path | None) -> tuple[str, bool]:
        """Write `report` to `path` (None: the user chose the clipboard only); the line to show, and whether it failed."""
        if path is None:
            return "Copied to the clipboard; no file written", False
        try:
            path.write_text(report, encoding="utf-8")
        except OSError as exc:
            return f"Copied, but {path}: {exc.strerror or exc}", True
        return f"Wrote {path} and copied it ({self.kind})", False
