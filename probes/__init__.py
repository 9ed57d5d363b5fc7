"""Live device probes for ascend-triage.

Each probe is a module runnable on its own (``python -m probes.<name> --json``) under the training
job's Python. This package imports nothing beyond the standard library, so listing probes never
needs torch.
"""

from __future__ import annotations

# Name -> one-line description. Modules starting with "_" (helpers, the test-only crash probe)
# are deliberately absent.
PROBES: dict[str, str] = {
    "env": "Version matrix: python, torch, torch_npu, CANN, driver; known-bad combinations",
    "op_support": "Runs ops on the device: native, CPU fallback, unsupported or numerically wrong",
    "allocator": "Caching-allocator stats, fragmentation, largest free block, *_ALLOC_CONF in force",
    "hccl_init": "torch.distributed init, rank env consistency, HCCL_* settings, leftover processes",
    "alignment": "data_ptr alignment of fresh, sliced, DataLoader and pinned tensors (64/512 B)",
    "loss_scale": "fp16/bf16 GradScaler step: scale growth/backoff, inf detection, fp16 saturation",
}

# Runnable by name but never listed: exists only so tests can exercise crash handling for real.
TEST_PROBES: dict[str, str] = {"_crash": "Misbehaves on purpose (--mode segv|hang|junk|exit)"}
