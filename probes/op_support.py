"""Run a list of ops on the device: native, CPU fallback, not supported, or numerically wrong.

Each op runs in a fresh child process: torch_npu prints its fallback warning once per op name per
process, and a crashing kernel must not take the other ops down with it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from probes import _subproc
from probes._common import Finding, ProbeContext, capture_fd2, one_line, run_probe_main

NAME = "op_support"
VERSION = "1.0"
DESCRIPTION = "Runs ops on the device and classifies each as native, CPU fallback, not supported or mismatch"

# Texts torch_npu (several variants) and MPS print when an op falls back to the host CPU.
FALLBACK_RE = re.compile(
    r"will fall ?back to (?:run on )?(?:the )?CPU|kernel is running on CPU|operator will fallback to run on the CPU"
    r"|fall back to CPU",
    re.IGNORECASE,
)
NOT_SUPPORTED_RE = re.compile(r"not currently (?:supported|implemented)|Could not run '|not implemented for", re.I)
# Settings that silence torch_npu's fallback warning (the profiler signal still works).
WARNING_MUTERS = ("TORCH_NPU_DISABLED_WARNING", "RANK", "TORCH_NPU_FALLBACK_CPU_DISABLE")

OpFn = Callable[[Any, Any], Any]
# Verdicts that say the device mishandles float64; error, crash and timeout say nothing either way.
FLOAT64_PROBLEMS = ("cpu_fallback", "not_supported", "mismatch")


def _inputs(torch: Any, device: Any, *shapes: tuple[int, ...], dtype: Any = None) -> list[Any]:
    # Inputs are generated on the CPU with a fixed seed so the device run and the CPU reference
    # see identical values.
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(*s, generator=gen, dtype=dtype or torch.float32).to(device) for s in shapes]


def _bmm(torch: Any, dev: Any) -> Any:
    a, b = _inputs(torch, dev, (4, 8, 16), (4, 16, 8))
    return torch.bmm(a, b)


def _instance_norm(torch: Any, dev: Any) -> Any:
    (x,) = _inputs(torch, dev, (2, 3, 8, 8))
    return torch.nn.functional.instance_norm(x)


def _float64(torch: Any, dev: Any) -> Any:
    (x,) = _inputs(torch, dev, (64,), dtype=torch.float64)
    return torch.exp(x) * x + x.sum()


def _where_gather_backward(torch: Any, dev: Any) -> Any:
    (x,) = _inputs(torch, dev, (4, 6))
    x.requires_grad_(True)
    idx = torch.tensor([[0, 2, 5], [1, 1, 3], [4, 0, 2], [5, 3, 1]], device=dev)
    g = x.gather(1, idx)
    torch.where(g > 0, g * 2, torch.zeros_like(g)).sum().backward()
    return x.grad


def _scatter_add_backward(torch: Any, dev: Any) -> Any:
    src, w = _inputs(torch, dev, (5, 4), (3, 4))
    src.requires_grad_(True)
    idx = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1], [2, 0, 1, 2], [0, 0, 0, 0], [2, 2, 2, 2]], device=dev)
    (torch.zeros(3, 4, device=dev).scatter_add(0, idx, src) * w).sum().backward()
    return src.grad


def _special_entr(torch: Any, dev: Any) -> Any:
    (x,) = _inputs(torch, dev, (32,))
    return torch.special.entr(x.abs())


def _linalg_lstsq(torch: Any, dev: Any) -> Any:
    a, b = _inputs(torch, dev, (6, 3), (6, 2))
    return torch.linalg.lstsq(a, b).solution


def _fp16_matmul(torch: Any, dev: Any) -> Any:
    a, b = _inputs(torch, dev, (16, 32), (32, 8), dtype=torch.float16)
    return a @ b


OPS: dict[str, OpFn] = {
    "bmm": _bmm,
    "instance_norm": _instance_norm,
    "float64": _float64,
    "where_gather_backward": _where_gather_backward,
    "scatter_add_backward": _scatter_add_backward,
    "special_entr": _special_entr,
    "linalg_lstsq": _linalg_lstsq,
    "fp16_matmul": _fp16_matmul,
}
DEFAULT_OPS = ("bmm", "instance_norm", "float64", "where_gather_backward", "scatter_add_backward", "special_entr")


def _synchronize(torch: Any, device_type: str) -> None:
    if device_type != "cpu":
        torch.get_device_module(device_type).synchronize()


@contextlib.contextmanager
def _host_op_names(torch: Any) -> Iterator[list[str]]:
    """Names of the aten ops the host dispatched inside the block.

    at::native::cpu_fallback (torch_npu, MPS, XLA) copies inputs with aten::_to_cpu, and the
    profiler records it even when the fallback warning was deduplicated or muted. The legacy
    (non-Kineto) profiler is used first because Kineto's start-up costs over a second per process.
    """
    names: list[str] = []
    try:
        prof = torch.autograd.profiler.profile(use_kineto=False)
        prof.__enter__()
    except Exception:  # legacy profiler removed in this torch: use Kineto
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        prof.__enter__()
    try:
        yield names
    finally:
        prof.__exit__(None, None, None)
        names.extend(e.name for e in prof.function_events)


def run_one(torch: Any, device_type: str, op: str) -> dict[str, Any]:
    """Run ``op`` on the device in this process and classify it. Meant for a fresh process."""
    fn = OPS[op]
    dev = torch.device(device_type)
    torch.set_warn_always(True)  # MPS-style TORCH_WARN_ONCE would otherwise report only one op
    record: dict[str, Any] = {"op": op, "device": device_type}
    out: Any = None
    with warnings.catch_warnings(record=True) as py_warnings, capture_fd2() as fd2:
        warnings.simplefilter("always")
        with _host_op_names(torch) as host_ops:
            try:
                out = fn(torch, dev)
                _synchronize(torch, device_type)
            except Exception as exc:
                record["error"] = one_line(exc)
    messages = fd2 + [str(w.message) for w in py_warnings]
    record["fallback_warnings"] = [
        ln.strip()[:300] for m in messages for ln in m.splitlines() if FALLBACK_RE.search(ln)
    ]
    record["to_cpu_events"] = host_ops.count("aten::_to_cpu")
    if "error" in record:
        record["verdict"] = "not_supported" if NOT_SUPPORTED_RE.search(record["error"]) else "error"
        return record
    if record["fallback_warnings"] or record["to_cpu_events"]:
        record["verdict"] = "cpu_fallback"
        return record
    record["verdict"] = "native"
    if device_type != "cpu":  # on the CPU the reference would be the same computation
        ref = fn(torch, torch.device("cpu"))
        got = out.detach().cpu()
        record["max_abs_diff"] = float((got.double() - ref.detach().double()).abs().max())
        if not torch.allclose(got.double(), ref.detach().double(), rtol=1e-2, atol=1e-3):
            record["verdict"] = "mismatch"
    return record


def _child_body(ctx: ProbeContext) -> list[Finding]:
    record = run_one(ctx.torch, ctx.device.type, ctx.args.one_op)
    return [Finding("op-result", record["verdict"], record)]


def _run_child(op: str, device_type: str, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "probes.op_support", "--json", "--device", device_type, "--one-op", op]
    outcome = _subproc.run_json_child(cmd, timeout=timeout, env=_subproc.child_env(), own_group=False)
    if outcome.result is None:
        if outcome.timed_out:
            verdict = "timeout"
        else:
            verdict = "crashed" if outcome.returncode is not None and outcome.returncode < 0 else "error"
        return {"op": op, "verdict": verdict, "error": outcome.error, "stderr_tail": outcome.stderr_tail[-500:]}
    if outcome.result.get("status") != "ok" or not outcome.result.get("findings"):
        return {"op": op, "verdict": "error", "error": outcome.result.get("reason", "no result")}
    evidence: dict[str, Any] = outcome.result["findings"][-1]["evidence"]
    return evidence


def _findings(records: list[dict[str, Any]], device_type: str) -> list[Finding]:
    by_verdict: dict[str, dict[str, Any]] = {}
    for rec in records:
        by_verdict.setdefault(rec["verdict"], {})[rec["op"]] = rec
    evidence = {
        "verdicts": {r["op"]: r["verdict"] for r in records},
        "muting_env": {k: os.environ[k] for k in WARNING_MUTERS if k in os.environ},
    }
    findings = [Finding("op-verdicts", f"{len(records)} op(s) probed on {device_type}", evidence)]
    rules = {
        "cpu_fallback": ("op-cpu-fallback", "fall back to the CPU", ["op-cpu-fallback"]),
        "not_supported": ("op-not-supported", "are not supported", ["op-not-supported"]),
        "mismatch": ("op-numeric-mismatch", "disagree with the CPU result", ["op-numeric-mismatch"]),
        "crashed": ("op-crashed", "crashed the process", ["op-not-supported"]),
        "error": ("op-error", "failed with an error", []),
        "timeout": ("op-timeout", "timed out", []),
    }
    for verdict, (fid, text, confirms) in rules.items():
        ops = by_verdict.get(verdict)
        if ops:
            findings.append(Finding(fid, f"{', '.join(ops)} {text} on {device_type}", ops, confirms=confirms))
    native = sorted(by_verdict.get("native", {}))
    if native:
        rules_out = ["op-cpu-fallback", "op-not-supported"] if len(native) == len(records) else []
        findings.append(
            Finding(
                "ops-native", f"{', '.join(native)} run natively on {device_type}", {"ops": native}, rules_out=rules_out
            )
        )
    f64 = next((r for r in records if r["op"] == "float64"), None)
    if f64 is not None and f64["verdict"] in FLOAT64_PROBLEMS:
        findings.append(
            Finding(
                "float64-unsupported",
                f"float64 tensors do not run natively on {device_type} "
                f"({f64['verdict']}); a float64 default dtype or numpy float64 inputs would hit this",
                f64,
                confirms=["float64-default-dtype"],
            )
        )
    elif f64 is not None and f64["verdict"] == "native":
        findings.append(
            Finding(
                "float64-native", f"float64 runs natively on {device_type}", {}, rules_out=["float64-default-dtype"]
            )
        )
    return findings


def body(ctx: ProbeContext) -> list[Finding]:
    if ctx.args.one_op:
        return _child_body(ctx)
    ops = [o.strip() for o in ctx.args.ops.split(",") if o.strip()]
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        raise ValueError(f"unknown op(s) {', '.join(unknown)}; known: {', '.join(OPS)}")
    workers = max(1, min(len(ops), os.cpu_count() or 1, 4))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        records = list(pool.map(lambda op: _run_child(op, ctx.device.type, ctx.args.op_timeout), ops))
    if all(r["verdict"] in ("error", "timeout") for r in records):
        raise RuntimeError(f"no op produced a verdict; first: {records[0]['op']}: {records[0].get('error')}")
    return _findings(records, ctx.device.type)


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS), help=f"comma-separated; known: {', '.join(OPS)}")
    # Ops run 4 at a time; a few slow ones must still fit in the runner's 60 s for the whole probe.
    parser.add_argument("--op-timeout", type=float, default=15.0, help="seconds per op (each runs in its own process)")
    parser.add_argument("--one-op", help=argparse.SUPPRESS)  # internal: the per-op child


def main(argv: list[str] | None = None) -> int:
    return run_probe_main(NAME, VERSION, DESCRIPTION, body, argv, _add_args)


if __name__ == "__main__":
    sys.exit(main())
