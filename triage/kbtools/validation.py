"""What every `triage kb validate` check shares: the entry under check, the KB it runs in, findings.

The checks themselves are in triage.kbtools.validators; running them is triage.kbtools.validate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from triage.kb.loader import KnowledgeBase, LoadedEntry
from triage.kb.models import Entry
from triage.kbtools.samples import Baselines
from triage.results import ScanResult

Severity = Literal["error", "warning", "info"]
HONEYPOT_MAX_CONFIDENCE = 0.5


@dataclass(frozen=True)
class Finding:
    validator: str
    severity: Severity
    path: Path
    line: int | None
    message: str
    entry_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.severity}: [{self.validator}] {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "validator": self.validator,
            "severity": self.severity,
            "file": str(self.path),
            "line": self.line,
            "entry": self.entry_id,
            "message": self.message,
        }


@dataclass(frozen=True)
class Target:
    """An entry file under validation, with the KB directory it belongs to."""

    loaded: LoadedEntry
    root: Path

    @property
    def entry(self) -> Entry:
        return self.loaded.entry


@dataclass
class Context:
    """What validators share: the merged KB the entries will run in, and the baseline logs."""

    targets: list[Target]
    kb: KnowledgeBase
    baselines: Baselines
    _checker: Any = None
    _scans: dict[str, ScanResult] = field(default_factory=dict)

    @property
    def checker(self) -> Any:
        if self._checker is None:  # compiling the KB is the slow part: only when a check needs it
            from triage.engine.compiled import compile_kb
            from triage.kbtools.examples import ExampleChecker

            self._checker = ExampleChecker(compile_kb(self.kb))
        return self._checker

    def scan(self, text: str) -> ScanResult:
        if text not in self._scans:
            self._scans[text] = self.checker.scan(text)
        return self._scans[text]

    def scan_file(self, path: Path) -> ScanResult:
        from triage.engine.scanner import Scanner
        from triage.scanning import scan_sources

        scanner = Scanner(self.checker.kb, prefilter=self.checker.prefilter)
        scan_sources(scanner, [str(path)])
        return scanner.result()

    def active(self, target: Target) -> bool:
        """False when another directory's entry with the same id replaces this one at scan time."""
        source = self.kb.sources.get(target.entry.id)
        return source is not None and source.path == target.loaded.path

    def active_targets(self) -> list[Target]:
        return [target for target in self.targets if self.active(target)]


class Validator:
    name: ClassVar[str]
    description: ClassVar[str]
    severity: ClassVar[Severity] = "error"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        return ()

    def finalize(self, ctx: Context) -> Iterable[Finding]:
        return ()

    def finding(self, target: Target, message: str, *loc: Any, severity: Severity | None = None) -> Finding:
        return Finding(
            self.name, severity or self.severity, target.loaded.path, target.loaded.line(*loc), message, target.entry.id
        )
