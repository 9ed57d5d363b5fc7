"""The only module that touches torch_npu directly.

NEVER RUN ON NPU HARDWARE: every call below that needs a working torch_npu (anything past the
import) was written from the torch_npu 2.13.0 wheel sources and has not executed on an Ascend
device. Only the "not installed" and "installed but import fails" paths have run (CPU box, no CANN).
Everything else in the probes goes through torch's generic device APIs, which torch_npu plugs into
as the PrivateUse1 backend "npu".
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
from typing import Any

from probes._common import Finding, one_line

# Import-error texts and the cause each one points at. Sources: docs/research notes on torch_npu
# 2.13 without CANN, and its _check_device_conflict message.
_IMPORT_ERROR_CAUSES: tuple[tuple[str, str], ...] = (
    ("Two accelerators cannot be used", "cuda-torch-with-npu"),
    ("cannot open shared object file", "cann-missing"),
    ("undefined symbol: acl", "cann-missing"),
    ("undefined symbol", "torch-npu-mismatch"),
)


@dataclasses.dataclass
class NpuImport:
    installed: bool
    version: str | None = None
    module: Any = None
    error: str | None = None
    available: bool = False


def installed_version() -> str | None:
    try:
        return importlib.metadata.version("torch-npu")
    except importlib.metadata.PackageNotFoundError:
        return None


def try_import() -> NpuImport:
    """Import torch_npu if it is installed; torch must already be imported with autoload off."""
    if importlib.util.find_spec("torch_npu") is None:
        return NpuImport(installed=False)
    result = NpuImport(installed=True, version=installed_version())
    try:
        import torch_npu  # type: ignore[import-not-found]
    except Exception as exc:  # ImportError without CANN, RuntimeError on a CUDA torch
        result.error = one_line(exc)
        return result
    result.module = torch_npu
    result.version = getattr(torch_npu, "__version__", result.version)
    try:  # NPU-ONLY PATH, never run
        import torch

        # torch_npu adds torch.npu when imported: torch's own types do not know it.
        result.available = bool(torch.npu.is_available()) and torch.npu.device_count() > 0  # type: ignore[attr-defined]
    except Exception as exc:
        result.error = f"torch_npu imported but device query failed: {one_line(exc)}"
    return result


def import_error_finding(npu: NpuImport) -> Finding:
    text = npu.error or ""
    confirms = [cause for pattern, cause in _IMPORT_ERROR_CAUSES if pattern in text][:1]
    return Finding(
        id="torch-npu-import-failed",
        message=f"torch_npu {npu.version or '?'} is installed but does not import: {text}",
        evidence={"torch_npu_version": npu.version, "error": text},
        confirms=confirms,
    )


def cann_version(npu: NpuImport) -> str | None:
    """CANN version as torch_npu reports it. NPU-ONLY PATH, never run."""
    if npu.module is None:
        return None
    try:
        from torch_npu.npu.utils import get_cann_version  # type: ignore[import-not-found]

        return str(get_cann_version())
    except Exception:
        return None


def supports_inf_nan(npu: NpuImport) -> bool | None:
    """False on saturation-mode chips (Atlas training / 910A), where fp16 overflow clamps to 65504
    instead of producing inf, so isfinite() checks miss it. NPU-ONLY PATH, never run."""
    if npu.module is None:
        return None
    try:
        from torch_npu.npu.utils import is_support_inf_nan

        return bool(is_support_inf_nan())
    except Exception:
        return None


def overflow_flag(npu: NpuImport, tensor: Any) -> bool | None:
    """The device's float-status overflow flag for ``tensor``. NPU-ONLY PATH, never run."""
    if npu.module is None:
        return None
    try:
        from torch_npu.npu.utils import npu_check_overflow

        return bool(npu_check_overflow(tensor))
    except Exception:
        return None
