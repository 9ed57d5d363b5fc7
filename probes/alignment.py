"""data_ptr alignment of the buffers a training step hands to kernels: fresh tensors, sliced views,
a DataLoader batch and pinned host memory, against 64 and 512 bytes.

The allocator-made buffers (fresh, DataLoader, pinned) must meet the device's own alignment; a
sliced view is misaligned by construction and is reported as evidence of what `.contiguous()`
(keeps the offset) and `.clone()` (realigns) do. Pinned memory and the 512-byte device expectation
have NEVER RUN on a GPU or NPU; on CPU pinning is reported unavailable.
"""

from __future__ import annotations

import sys
from typing import Any

from probes._common import Finding, ProbeContext, one_line, run_probe_main

NAME = "alignment"
VERSION = "1.0"
DESCRIPTION = "data_ptr alignment of fresh, sliced, DataLoader and pinned tensors vs 64 and 512 bytes"

BOUNDARIES = (64, 512)
# What each allocator guarantees: c10 CPU allocator 64 B (gAlignment); the CUDA caching allocator
# rounds blocks to 512 B (kMinBlockSize); NPU base addresses are 512 B aligned (PYTORCH_NPU_ALLOC_CONF docs).
REQUIRED = {"cpu": 64, "cuda": 512, "npu": 512}


def describe(t: Any) -> dict[str, Any]:
    ptr, storage_ptr = t.data_ptr(), t.untyped_storage().data_ptr()
    info: dict[str, Any] = {
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
        "device": str(t.device),
        "data_ptr": hex(ptr),
        "storage_ptr": hex(storage_ptr),
        "storage_offset": t.storage_offset(),
        "contiguous": t.is_contiguous(),
    }
    for b in BOUNDARIES:
        info[f"data_ptr_mod_{b}"] = ptr % b
        info[f"storage_ptr_mod_{b}"] = storage_ptr % b
    return info


def samples(torch: Any, dev: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(allocator-made buffers that must be aligned, views that show how misalignment arises)."""
    made = {
        f"fresh_{n}B": torch.empty(max(1, n // 4), dtype=torch.float32, device=dev)
        for n in (4, 100, 4096, 1 << 20, 3 * (1 << 20) + 12)
    }
    base = torch.arange(1024, dtype=torch.float32, device=dev)
    views = {
        "slice_base[3:]": base[3:],
        "slice_base[3:].contiguous()": base[3:].contiguous(),
        "slice_base[3:].clone()": base[3:].clone(),
        "transpose_view": base.view(32, 32).t()[1:],
    }
    made["dataloader_batch"] = _dataloader_batch(torch, dev)
    return made, views


def _dataloader_batch(torch: Any, dev: Any) -> Any:
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(37, 13), torch.arange(37))
    features, _ = next(iter(DataLoader(data, batch_size=5, shuffle=False, num_workers=0)))
    return features.to(dev)


def _pinned(torch: Any, device_type: str) -> tuple[Any | None, str | None]:
    if device_type == "cpu":
        return None, "pinned memory needs an accelerator (pin_memory() raises on a CPU-only box)"
    try:
        return torch.randn(1000, 3).pin_memory(), None
    except Exception as exc:
        return None, one_line(exc)


def body(ctx: ProbeContext) -> list[Finding]:
    torch, dev_type = ctx.torch, ctx.device.type
    required = REQUIRED[dev_type]
    made, views = samples(torch, ctx.torch_device)
    pinned, pin_reason = _pinned(torch, dev_type)
    if pinned is not None:
        made["pinned_host"] = pinned
    made_info = {k: describe(t) for k, t in made.items()}
    view_info = {k: describe(t) for k, t in views.items()}
    mods = {
        k: view_info[k][f"data_ptr_mod_{required}"]
        for k in ("slice_base[3:]", "slice_base[3:].contiguous()", "slice_base[3:].clone()")
    }
    findings = [
        Finding(
            "view-alignment",
            "data_ptr % {} of a slice, its .contiguous() and its .clone(): {}".format(
                required, ", ".join(f"{k}={v}" for k, v in mods.items())
            ),
            view_info,
        )
    ]
    if pin_reason:
        findings.append(Finding("pinned-unavailable", f"pinned memory not checked: {pin_reason}", {}))
    # A pinned host buffer is aligned to the host allocator's boundary, not the device's.
    bad = {
        k: v
        for k, v in made_info.items()
        if v[f"data_ptr_mod_{REQUIRED['cpu'] if k == 'pinned_host' else required}"] != 0
    }
    if bad:
        findings.append(
            Finding(
                "unaligned-buffer",
                f"{', '.join(bad)} not aligned to {required} bytes on {dev_type}",
                bad,
                confirms=["unaligned-buffer"],
            )
        )
    else:
        findings.append(
            Finding(
                "buffers-aligned",
                f"all allocator-made buffers are {required}-byte aligned on {dev_type}",
                made_info,
                rules_out=["unaligned-buffer"],
            )
        )
    return findings


def main(argv: list[str] | None = None) -> int:
    return run_probe_main(NAME, VERSION, DESCRIPTION, body, argv)


if __name__ == "__main__":
    sys.exit(main())
