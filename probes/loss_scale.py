"""A tiny fp16 and bf16 training step with torch.amp.GradScaler on the device: initial scale,
growth on a clean step, backoff and a skipped step on an overflowing one, NaN losses, and whether
fp16 overflow produces inf at all.

Older Ascend chips (Atlas training series, 910A) run in saturation mode: fp16 overflow clamps to
65504 instead of becoming inf, so isfinite() and GradScaler's inf check miss it; there the probe
asks torch_npu's overflow flag (probes/_npu.py, NEVER RUN on an NPU). The CUDA path has NEVER RUN
on a GPU; only the CPU path has executed.
"""

from __future__ import annotations

import sys
from typing import Any

from probes import _npu
from probes._common import Finding, ProbeContext, one_line, run_probe_main

NAME = "loss_scale"
VERSION = "1.0"
DESCRIPTION = "fp16/bf16 GradScaler step: scale growth and backoff, inf detection, fp16 saturation"

INIT_SCALE = 2.0**16
FP16_MAX = 65504.0
# Inputs this large overflow an fp16 matmul (|x·w| >> 65504) but stay finite in fp32.
OVERFLOW_INPUT = 1e6


def _model(torch: Any, dev: Any) -> tuple[Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4).to(dev)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def _step(torch: Any, dev: Any, model: Any, opt: Any, scaler: Any, dtype: Any, x: Any) -> dict[str, Any]:
    before = [p.detach().clone() for p in model.parameters()]
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type=dev.type, dtype=dtype):
        out = model(x)
    loss = out.float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    changed = any(not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters()))
    return {
        "loss": float(loss.detach().cpu()),
        "loss_finite": bool(torch.isfinite(loss).all()),
        "out_dtype": str(out.dtype).removeprefix("torch."),
        "scale_after": float(scaler.get_scale()),
        "params_updated": changed,
    }


def scaler_run(torch: Any, dev: Any, dtype: Any) -> dict[str, Any]:
    model, opt = _model(torch, dev)
    scaler = torch.amp.GradScaler(dev.type, init_scale=INIT_SCALE, growth_interval=1)
    result: dict[str, Any] = {
        "dtype": str(dtype).removeprefix("torch."),
        "enabled": scaler.is_enabled(),
        "init_scale": INIT_SCALE,
    }
    if not scaler.is_enabled():
        return result
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)).to(dev)
    result["clean_step"] = _step(torch, dev, model, opt, scaler, dtype, x)
    result["overflow_step"] = _step(torch, dev, model, opt, scaler, dtype, x * OVERFLOW_INPUT)
    return result


def saturation_check(torch: Any, dev: Any, npu: Any) -> dict[str, Any]:
    t = torch.tensor([60000.0], dtype=torch.float16, device=dev) * 2
    value = float(t.float().cpu()[0])
    return {
        "fp16_60000x2": value,
        "is_inf": value == float("inf"),
        "saturated": value == FP16_MAX,
        "npu_supports_inf_nan": _npu.supports_inf_nan(npu),
        "npu_overflow_flag": _npu.overflow_flag(npu, t),
    }


def fp16_findings(run: dict[str, Any]) -> list[Finding]:
    if not run["enabled"]:
        return [
            Finding(
                "grad-scaler-disabled",
                "torch.amp.GradScaler disabled itself on this device: fp16 overflow would be applied unchecked",
                run,
                confirms=["fp16-overflow"],
            )
        ]
    clean, over = run["clean_step"], run["overflow_step"]
    findings = []
    if not clean["loss_finite"]:
        findings.append(
            Finding(
                "fp16-clean-step-nan",
                f"a small, well-scaled fp16 step gave loss {clean['loss']}",
                run,
                confirms=["fp16-overflow"],
            )
        )
    grew = clean["scale_after"] == INIT_SCALE * 2
    backed_off = over["scale_after"] == clean["scale_after"] / 2 and not over["params_updated"]
    if grew and backed_off:
        findings.append(
            Finding(
                "grad-scaler-ok",
                f"scale grew {INIT_SCALE:g} -> {clean['scale_after']:g} on a clean "
                f"step and backed off to {over['scale_after']:g}, skipping the overflowing step",
                run,
                rules_out=["loss-scale-collapse"],
            )
        )
    else:
        findings.append(
            Finding(
                "grad-scaler-misbehaves",
                f"expected growth to {INIT_SCALE * 2:g} then backoff with a "
                f"skipped step; got {clean['scale_after']:g} then {over['scale_after']:g}, "
                f"params updated on overflow: {over['params_updated']}",
                run,
                confirms=["loss-scale-collapse"],
            )
        )
    return findings


def body(ctx: ProbeContext) -> list[Finding]:
    torch, dev = ctx.torch, ctx.torch_device
    sat = saturation_check(torch, dev, ctx.npu)
    findings: list[Finding] = []
    if sat["saturated"] or sat["npu_supports_inf_nan"] is False:
        findings.append(
            Finding(
                "fp16-saturation-mode",
                "fp16 overflow saturates to 65504 instead of inf: isfinite() "
                "and GradScaler's inf check miss overflow on this device; use the NPU overflow flag",
                sat,
                confirms=["fp16-saturation-mode"],
            )
        )
    else:
        findings.append(
            Finding(
                "fp16-overflow-visible",
                "fp16 overflow produces inf, so inf checks see it",
                sat,
                rules_out=["fp16-saturation-mode"],
            )
        )
    for dtype in (torch.float16, torch.bfloat16):
        try:
            run = scaler_run(torch, dev, dtype)
        except Exception as exc:  # e.g. autocast or the dtype not supported on this device
            findings.append(
                Finding(
                    f"{str(dtype).removeprefix('torch.')}-step-failed",
                    f"{dtype} autocast step failed: {one_line(exc)}",
                    {},
                )
            )
            continue
        if dtype is torch.float16:
            findings += fp16_findings(run)
        else:
            clean = run.get("clean_step", {})
            findings.append(Finding("bf16-step", f"bf16 step loss finite: {clean.get('loss_finite')}", run))
    return findings


def main(argv: list[str] | None = None) -> int:
    return run_probe_main(NAME, VERSION, DESCRIPTION, body, argv)


if __name__ == "__main__":
    sys.exit(main())
