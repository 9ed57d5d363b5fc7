"""How the app runs live probes: an injectable callable, by default the probe runner if installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ProbeRunner = Callable[[str], dict[str, Any]]
"""Runs one probe by name and returns its JSON object (see probes/README.md)."""


class ProbeRunnerUnavailable(RuntimeError):
    """This installation has no probe runner; str() is what the UI shows."""


def default_probe_runner(name: str) -> dict[str, Any]:
    # Imported per call, not at start-up: the runner is optional and the UI must start without it.
    try:
        from triage.probing.runner import run_probe  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ProbeRunnerUnavailable("probe runner unavailable") from exc
    return run_probe(name).model_dump(mode="json")  # type: ignore[no-any-return]

