"""How the app runs live probes and re-ranks by what they found.

The runner is an injectable callable, by default the probe runner if installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.message import Message

from triage.engine.probe_evidence import apply_probe_results
from triage.results import ScanResult
from triage.tui.messages import ProbeProgress, ProbesFinished

ProbeRunner = Callable[[str], dict[str, Any]]
"""Runs one probe by name and returns its JSON object (see probes/README.md)."""


class ProbeRunnerUnavailable(RuntimeError):
    """This installation has no probe runner; str() is what the UI shows."""


def default_probe_runner(name: str) -> dict[str, Any]:
    # Imported per call, not at start-up: the runner is optional and the UI must start without it.
    try:
        from triage.probing.runner import run_probe
    except ImportError as exc:
        raise ProbeRunnerUnavailable("probe runner unavailable") from exc
    return run_probe(name).model_dump(mode="json")


class ProbeSession:
    """The probes run so far: `run` in a thread worker posts progress, `record` keeps the results."""

    def __init__(self, runner: ProbeRunner) -> None:
        self._runner = runner
        self.results: dict[str, dict[str, Any]] = {}
        """Latest result of each probe run, by probe name."""

    def run(self, diagnosis_id: str, probes: list[str], post: Callable[[Message], object]) -> None:
        """Run the probes of one diagnosis; a failing probe is reported, never fatal to the UI."""
        results: list[dict[str, Any]] = []
        errors: list[str] = []
        for done, name in enumerate(probes):
            post(ProbeProgress(name, done, len(probes)))
            try:
                results.append(self._runner(name))
            except ProbeRunnerUnavailable as exc:
                errors.append(str(exc))
                break
            except Exception as exc:  # noqa: BLE001 - shown in the UI, which must outlive the probe
                errors.append(f"{name}: {exc}")
        post(ProbesFinished(diagnosis_id, results, errors))

    def record(self, results: list[dict[str, Any]]) -> None:
        self.results |= {str(result.get("probe", "?")): result for result in results}

    def rerank(self, scan_result: ScanResult) -> ScanResult:
        """The scanner's ranking with what the probes found folded in."""
        probes = list(self.results.values())
        return apply_probe_results(scan_result, probes) if probes else scan_result
