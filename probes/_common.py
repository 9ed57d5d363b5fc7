"""Shared plumbing for every probe: arguments, torch import, device detection, the JSON envelope.

Standard library only at import time: probes run under the training job's own Python, which may
lack torch, and must then still print a well-formed ``skipped`` result.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

INSTALL_HINT = "pip install 'ascend-triage[probes]'  (or: pip install torch)"
DEVICE_TYPES = ("npu", "cuda", "cpu")


@dataclasses.dataclass
class Finding:
    id: str
    message: str
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    confirms: list[str] = dataclasses.field(default_factory=list)
    rules_out: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class DeviceInfo:
    type: str
    name: str
    count: int


class ProbeSkipped(Exception):
    """Raised by a probe body when the probe cannot measure anything meaningful here."""


@dataclasses.dataclass
class ProbeContext:
    torch: Any
    device: DeviceInfo
    npu: Any  # probes._npu.NpuImport; typed loosely because probes._npu imports this module
    args: argparse.Namespace

    @property
    def torch_device(self) -> Any:
        return self.torch.device(self.device.type)


ProbeBody = Callable[[ProbeContext], list[Finding]]


def import_torch() -> tuple[Any | None, str | None]:
    # torch autoloads torch_npu through an entry point; without CANN that makes `import torch`
    # itself fail, so autoload is disabled and torch_npu imported explicitly (see probes/_npu.py).
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install raising anything at import
        return None, one_line(exc)
    return torch, None


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def detect_device(torch: Any, requested: str | None, npu_available: bool) -> DeviceInfo:
    """Pick npu, then cuda, then cpu; ``requested`` overrides and must be usable here."""
    if requested is None:
        accel = _current_accelerator(torch)
        if npu_available or accel == "npu":
            requested = "npu"
        elif accel == "cuda" or torch.cuda.is_available():
            requested = "cuda"
        else:
            requested = "cpu"
    elif requested != "cpu" and not _device_usable(torch, requested, npu_available):
        raise ProbeSkipped(f"--device {requested} requested but no {requested} device is available here")
    if requested == "cpu":
        return DeviceInfo("cpu", _cpu_name(), 1)
    mod = torch.get_device_module(requested)
    count = int(mod.device_count())
    try:
        name = str(mod.get_device_name(0))
    except Exception as exc:  # the fake "npu" of the tests, or a device that refuses the query
        name = f"unknown ({one_line(exc)})"
    return DeviceInfo(requested, name, count)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _current_accelerator(torch: Any) -> str | None:
    accel_mod = getattr(torch, "accelerator", None)
    if accel_mod is None or not hasattr(accel_mod, "current_accelerator"):
        return None  # torch < 2.6: fall back to the per-backend checks
    try:
        accel = accel_mod.current_accelerator()
    except Exception:
        return None
    return accel.type if accel is not None and accel_mod.is_available() else None


def _device_usable(torch: Any, device: str, npu_available: bool) -> bool:
    if device == "npu":
        return npu_available or _current_accelerator(torch) == "npu"
    if device == "cuda":
        return bool(torch.cuda.is_available())
    return False


@contextlib.contextmanager
def capture_fd2() -> Iterator[list[str]]:
    """Capture what C++ writes straight to file descriptor 2.

    torch_npu's CPU-fallback warning bypasses Python's warnings and sys.stderr, so only a dup2 of
    fd 2 sees it. The captured text is appended to the yielded list when the block exits.
    """
    out: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def env_subset(names: list[str] | tuple[str, ...]) -> dict[str, str]:
    return {n: os.environ[n] for n in names if n in os.environ}


def envelope(
    probe: str,
    version: str,
    device: DeviceInfo | None,
    status: str,
    findings: list[Finding],
    seconds: float,
    reason: str | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "probe": probe,
        "version": version,
        "device": dataclasses.asdict(device) if device else {"type": "cpu", "name": "unknown", "count": 0},
        "status": status,
        "findings": [dataclasses.asdict(f) for f in findings],
        "seconds": round(seconds, 3),
    }
    if reason:
        result["reason"] = reason
    return result


def status_of(findings: list[Finding]) -> str:
    # Informational findings (evidence, or causes ruled out) keep the probe "ok"; only a finding
    # that confirms a cause turns it into "finding".
    return "finding" if any(f.confirms for f in findings) else "ok"


def parse_args(
    probe: str, description: str, argv: list[str] | None, add_args: Callable[[argparse.ArgumentParser], None] | None
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m probes.{probe}", description=description)
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--device", choices=DEVICE_TYPES, help="override device detection")
    if add_args:
        add_args(parser)
    return parser.parse_args(argv)


def run_probe_main(
    probe: str,
    version: str,
    description: str,
    body: ProbeBody,
    argv: list[str] | None = None,
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Entry point shared by all probes. Always prints one result; returns the process exit code."""
    args = parse_args(probe, description, argv, add_args)
    with reserved_stdout() as out:
        result = _run(probe, version, body, args)
        emit(result, out, as_json=args.json)
    return 0


@contextlib.contextmanager
def reserved_stdout() -> Iterator[TextIO]:
    """Point fd 1 at stderr while the probe runs and hand back the real stdout for the result.

    CANN logs go to stdout with ASCEND_SLOG_PRINT_TO_STDOUT=1, and C++ libraries print there too;
    either would break the one-JSON-object contract.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        # sys.stdout too, for when it is not backed by fd 1 (an embedding host, a test harness).
        with os.fdopen(os.dup(saved), "w", encoding="utf-8") as out, contextlib.redirect_stdout(sys.stderr):
            yield out
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _run(probe: str, version: str, body: ProbeBody, args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    device: DeviceInfo | None = None
    findings: list[Finding] = []
    reason: str | None = None
    torch, torch_error = import_torch()
    if torch is None:
        status, reason = "skipped", f"torch is not importable ({torch_error}); install it: {INSTALL_HINT}"
    else:
        from probes import _npu

        npu = _npu.try_import()
        if npu.error:
            findings.append(_npu.import_error_finding(npu))
        try:
            device = detect_device(torch, args.device, npu.available)
            findings += body(ProbeContext(torch=torch, device=device, npu=npu, args=args))
            status = status_of(findings)
        except ProbeSkipped as exc:
            status, reason = "skipped", str(exc)
            device = device or DeviceInfo(args.device or "cpu", "unavailable", 0)
        except Exception as exc:  # a probe bug or a device failure: one line, never a traceback
            status, reason = "error", one_line(exc)
    return envelope(probe, version, device, status, findings, time.monotonic() - started, reason)


def emit(result: dict[str, Any], out: TextIO, *, as_json: bool) -> None:
    if as_json:
        out.write(json.dumps(_finite(result), default=str, allow_nan=False) + "\n")
    else:
        out.write(human_summary(result) + "\n")
    out.flush()


def _finite(value: Any) -> Any:
    # NaN and inf losses are normal evidence here, but bare NaN/Infinity is not valid JSON.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def human_summary(result: dict[str, Any]) -> str:
    dev = result["device"]
    head = f"{result['probe']} [{dev['type']}: {dev['name']}] {result['status']} ({result['seconds']:.1f}s)"
    lines = [head]
    if result.get("reason"):
        lines.append(f"  reason: {result['reason']}")
    for f in result["findings"]:
        tags = []
        if f["confirms"]:
            tags.append("confirms " + ", ".join(f["confirms"]))
        if f["rules_out"]:
            tags.append("rules out " + ", ".join(f["rules_out"]))
        suffix = f"  [{'; '.join(tags)}]" if tags else ""
        lines.append(f"  - {f['id']}: {f['message']}{suffix}")
    return "\n".join(lines)
