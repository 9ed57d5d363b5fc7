"""Caching-allocator state: allocated/reserved/active/inactive-split bytes, largest free block,
fragmentation, and the *_ALLOC_CONF settings in force.

CUDA and NPU share the stats key names (both use c10's DeviceStats), so one code path reads
``torch.get_device_module(dev).memory_stats()`` for both. NEVER RUN ON A GPU OR AN NPU: on this
project's CPU-only CI only the "unsupported here" path has executed.
"""

from __future__ import annotations

import sys
from typing import Any

from probes._common import Finding, ProbeContext, env_subset, one_line, run_probe_main

NAME = "allocator"
VERSION = "1.0"
DESCRIPTION = "Caching-allocator stats, fragmentation, largest free block and *_ALLOC_CONF in force"

ALLOC_CONF_VARS = ("PYTORCH_NPU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
STAT_KEYS = {
    "allocated_bytes": "allocated_bytes.all.current",
    "reserved_bytes": "reserved_bytes.all.current",
    "active_bytes": "active_bytes.all.current",
    "inactive_split_bytes": "inactive_split_bytes.all.current",
    "peak_reserved_bytes": "reserved_bytes.all.peak",
    "num_alloc_retries": "num_alloc_retries",
    "num_ooms": "num_ooms",
}
# Above this share of reserved-but-unallocated memory, expandable segments usually help.
FRAGMENTATION_THRESHOLD = 0.3
# Device memory already in use at probe start above this share means someone else holds it.
HELD_THRESHOLD = 0.5
# Workload used so the numbers reflect a split-and-free pattern, not an empty allocator.
_WORKLOAD_MB = 64


def largest_free_block(snapshot: list[dict[str, Any]]) -> int | None:
    sizes = [b["size"] for seg in snapshot for b in seg.get("blocks", []) if b.get("state") == "inactive"]
    return max(sizes) if sizes else None


def read_stats(torch: Any, device_type: str) -> dict[str, Any]:
    mod = torch.get_device_module(device_type)
    raw = mod.memory_stats()
    stats: dict[str, Any] = {k: raw.get(src) for k, src in STAT_KEYS.items()}
    try:
        stats["largest_free_block_bytes"] = largest_free_block(mod.memory_snapshot())
    except Exception as exc:  # not every backend exposes a snapshot
        stats["largest_free_block_bytes"] = None
        stats["snapshot_error"] = one_line(exc)
    try:
        free, total = mod.mem_get_info()
        stats.update(device_free_bytes=int(free), device_total_bytes=int(total))
    except Exception:
        pass
    reserved = stats["reserved_bytes"] or 0
    stats["fragmentation_ratio"] = round(1 - (stats["allocated_bytes"] or 0) / reserved, 4) if reserved else 0.0
    return stats


def _exercise(torch: Any, device_type: str) -> list[Any]:
    # Allocate mixed sizes and free every other one, leaving split, inactive blocks behind, so the
    # probe shows how this allocator and config behave under churn.
    dev = torch.device(device_type)
    blocks = [
        torch.empty(int((i % 7 + 1) * _WORKLOAD_MB * 2**20 / 28), dtype=torch.uint8, device=dev) for i in range(28)
    ]
    return blocks[::2]


def recommendation(stats: dict[str, Any], conf: dict[str, str]) -> str:
    expandable = any("expandable_segments:True" in v for v in conf.values())
    if stats["fragmentation_ratio"] >= FRAGMENTATION_THRESHOLD and not expandable:
        var = "PYTORCH_NPU_ALLOC_CONF" if "PYTORCH_NPU_ALLOC_CONF" in conf else "PYTORCH_ALLOC_CONF"
        return f"set {var}=expandable_segments:True (or max_split_size_mb) to cut fragmentation"
    if stats["num_ooms"]:
        return "OOMs with low fragmentation point at true capacity: reduce batch size or use recomputation"
    return "no allocator change needed"


def _memory_held_by_others(torch: Any, device_type: str) -> Finding | None:
    # Measured before this probe allocates anything: whatever is in use now belongs to other
    # processes (or a driver reservation), which is what a leftover training process looks like.
    try:
        free, total = torch.get_device_module(device_type).mem_get_info()
    except Exception:
        return None
    used = 1 - free / total if total else 0.0
    evidence = {"device_free_bytes": int(free), "device_total_bytes": int(total), "used_ratio": round(used, 4)}
    if used >= HELD_THRESHOLD:
        return Finding(
            "device-memory-held",
            f"{used:.0%} of device memory is in use before this probe allocated anything: another process holds it",
            evidence,
            confirms=["leftover-process"],
        )
    return Finding("device-memory-free", f"{used:.0%} of device memory in use at probe start", evidence)


def body(ctx: ProbeContext) -> list[Finding]:
    conf = env_subset(ALLOC_CONF_VARS)
    findings = [Finding("alloc-conf", f"allocator config in force: {conf or 'defaults'}", {"env": conf})]
    if "PYTORCH_NPU_ALLOC_CONF" in conf and "PYTORCH_ALLOC_CONF" in conf:
        findings.append(
            Finding(
                "alloc-conf-conflict",
                "PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF are both set; torch_npu refuses to start with both",
                {"env": conf},
            )
        )
    if ctx.device.type == "cpu":
        findings.append(
            Finding(
                "allocator-unsupported",
                "unsupported here: the CPU has no caching allocator, so no allocator statistics were measured",
                {"supported": False},
            )
        )
        return findings
    held = _memory_held_by_others(ctx.torch, ctx.device.type)
    if held is not None:
        findings.append(held)
    kept = _exercise(ctx.torch, ctx.device.type)
    stats = read_stats(ctx.torch, ctx.device.type)
    del kept
    stats["recommendation"] = recommendation(stats, conf)
    fragmented = stats["fragmentation_ratio"] >= FRAGMENTATION_THRESHOLD
    findings.append(
        Finding(
            "allocator-fragmented" if fragmented else "allocator-stats",
            f"fragmentation {stats['fragmentation_ratio']:.0%} of reserved memory is cached but unallocated; "
            f"{stats['recommendation']}",
            stats,
            confirms=["fragmentation"] if fragmented else [],
            rules_out=[] if fragmented else ["fragmentation"],
        )
    )
    return findings


def main(argv: list[str] | None = None) -> int:
    return run_probe_main(NAME, VERSION, DESCRIPTION, body, argv)


if __name__ == "__main__":
    sys.exit(main())
