"""Run each probe as ``python -m probes.<name> --json`` in its own subprocess.

The probe runs under the Python that has torch (the training job's), which need not be the one
running triage. Whatever the child does (segfault, hang, non-zero exit, junk on stdout), the
caller gets a ProbeResult with status "error" and a one-line reason, never an exception.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence

from pydantic import ValidationError

import probes
from probes import _subproc
from triage.probing import DEFAULT_TIMEOUT, PYTHON_ENV
from triage.probing.models import ProbeDevice, ProbeResult


class UnknownProbeError(ValueError):
    """A probe name that is neither listed nor a test-only probe."""


def list_probes() -> list[tuple[str, str]]:
    return list(probes.PROBES.items())


def probe_python(python: str | None = None) -> str:
    return python or os.environ.get(PYTHON_ENV) or sys.executable


def run_probe(
    name: str,
    *,
    python: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    device: str | None = None,
    extra_args: Sequence[str] = (),
) -> ProbeResult:
    if name not in probes.PROBES and name not in probes.TEST_PROBES:
        raise UnknownProbeError(f"unknown probe {name!r}; known: {', '.join(probes.PROBES)}")
    cmd = [probe_python(python), "-m", f"probes.{name}", "--json"]
    if device:
        cmd += ["--device", device]
    cmd += list(extra_args)
    started = time.monotonic()
    outcome = _subproc.run_json_child(cmd, timeout=timeout, env=_subproc.child_env())
    elapsed = time.monotonic() - started
    if outcome.result is not None:
        try:
            return ProbeResult.model_validate(outcome.result)
        except ValidationError as exc:
            reason = (
                f"printed JSON that breaks the probe contract: {exc.error_count()} error(s), first: {_first_error(exc)}"
            )
            return _error(name, device, reason, elapsed, outcome.stderr_tail)
    return _error(name, device, f"probe {name} {outcome.error}", elapsed, outcome.stderr_tail)


def run_probes(
    names: Iterable[str],
    *,
    python: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    device: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[ProbeResult]:
    # Sequential on purpose: probes share one device, and parallel runs would skew allocator and
    # timing numbers.
    return [run_probe(n, python=python, timeout=timeout, device=device, extra_args=extra_args) for n in names]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}"


def _error(name: str, device: str | None, reason: str, seconds: float, stderr_tail: str) -> ProbeResult:
    return ProbeResult(
        probe=name,
        version="",
        device=ProbeDevice.model_validate({"type": device or "cpu", "name": "unknown", "count": 0}),
        status="error",
        findings=[],
        seconds=round(seconds, 3),
        reason=reason,
        stderr_tail=stderr_tail,
    )
