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


def probe_verdict(result: dict[str, Any]) -> str:
    """What a probe result means for the causes, in a few words.

    A probe whose findings neither confirm nor rule out any cause measured nothing that matters
    here (the allocator probe on a CPU): `ok` would read as "all clear", so it says inconclusive.
    """
    status = str(result.get("status", "?"))
    findings = [f for f in result.get("findings") or [] if isinstance(f, dict)]
    if status == "skipped":
        return f"inconclusive here: {result.get('reason') or 'it cannot measure on this machine'}"
    if status != "ok" or any(f.get("confirms") or f.get("rules_out") for f in findings):
        return status + (f": {result['reason']}" if status == "error" and result.get("reason") else "")
    why = "; ".join(str(f.get("message", "")) for f in findings) or f"no finding on {_device(result)}"
    return f"inconclusive here: confirms or rules out no cause ({why})"


def _device(result: dict[str, Any]) -> str:
    device = result.get("device")
    return str(device.get("type", "?")) if isinstance(device, dict) else str(device or "?")
