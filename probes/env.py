"""Version matrix (python, torch, torch_npu, CANN, driver, firmware, npu-smi) and known-bad combos."""

from __future__ import annotations

import glob
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from probes import _npu
from probes._common import Finding, ProbeContext, run_probe_main

NAME = "env"
VERSION = "1.0"
DESCRIPTION = "Version matrix and known-bad torch / torch_npu / CANN combinations"

ASCEND_ROOT = Path("/usr/local/Ascend")
_CANN_INFO_GLOBS = (
    "{root}/ascend_toolkit_install.info",
    "{root}/*/ascend_toolkit_install.info",
)
_DRIVER_FILES = {
    "driver": ASCEND_ROOT / "driver" / "version.info",
    "firmware": ASCEND_ROOT / "firmware" / "version.info",
}


def _read_version_file(path: Path) -> str | None:
    """Ascend *.info files are key=value lines; the version key differs between files."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip().lower() in ("version", "package_version", "firmware_version", "driver_version"):
            return value.strip()
    return None


def cann_install() -> dict[str, str | None]:
    roots = [
        os.environ.get("ASCEND_TOOLKIT_HOME"),
        os.environ.get("ASCEND_HOME_PATH"),
        str(ASCEND_ROOT / "ascend-toolkit" / "latest"),
    ]
    for root in filter(None, roots):
        for pattern in _CANN_INFO_GLOBS:
            for info in sorted(glob.glob(pattern.format(root=root))):
                version = _read_version_file(Path(info))
                if version:
                    return {"version": version, "source": info}
    return {"version": None, "source": None}


def npu_smi() -> dict[str, str | None]:
    exe = shutil.which("npu-smi")
    if exe is None:
        return {"output": None, "chip": None}
    try:
        proc = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=15)
        out = proc.stdout.strip() or proc.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"output": f"npu-smi failed: {exc}", "chip": None}
    # The table has a row like "| 0     910B3     | OK ..."; the chip name is the word after the id.
    chip = re.search(r"\|\s*\d+\s+(\d{3}[A-Z]?\w*)\s", out)
    return {"output": out[:4000], "chip": chip.group(1) if chip else None}


def _base_version(version: str) -> str:
    """'2.13.0+cpu' -> '2.13.0'; '2.12.0.post3' -> '2.12.0'."""
    return re.split(r"[+]|\.post|rc|a\d|b\d", version)[0]


def matrix(ctx: ProbeContext) -> dict[str, object]:
    torch = ctx.torch
    cann = cann_install()
    smi = npu_smi()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": getattr(torch.version, "cuda", None),
        "torch_npu": ctx.npu.version,
        "torch_npu_imports": ctx.npu.installed and ctx.npu.error is None,
        "cann": _npu.cann_version(ctx.npu) or cann["version"],
        "cann_source": "torch_npu" if _npu.cann_version(ctx.npu) else cann["source"],
        "ascend_home_path": os.environ.get("ASCEND_HOME_PATH"),
        "ascend_toolkit_home": os.environ.get("ASCEND_TOOLKIT_HOME"),
        **{k: _read_version_file(p) for k, p in _DRIVER_FILES.items()},
        "npu_smi": smi["output"],
        "chip": smi["chip"] or (ctx.device.name if ctx.device.type == "npu" else None),
    }


def checks(m: dict[str, object]) -> list[Finding]:
    torch_v, npu_v = str(m["torch"]), m["torch_npu"]
    if npu_v is None:
        return [
            Finding(
                "torch-npu-absent",
                "torch_npu is not installed in this Python",
                {"torch": torch_v},
                rules_out=["torch-npu-mismatch", "cuda-torch-with-npu"],
            )
        ]
    return [_torch_pair(torch_v, str(npu_v)), _torch_build(torch_v, m["torch_cuda"]), _cann(m)]


def _torch_pair(torch_v: str, npu_v: str) -> Finding:
    if _base_version(npu_v) != _base_version(torch_v):
        return Finding(
            "torch-npu-version-mismatch",
            f"torch_npu {npu_v} requires torch {_base_version(npu_v)} exactly, found {torch_v}",
            {"torch": torch_v, "torch_npu": npu_v},
            confirms=["torch-npu-mismatch"],
        )
    return Finding(
        "torch-npu-version-match",
        f"torch {torch_v} matches torch_npu {npu_v}",
        {"torch": torch_v, "torch_npu": npu_v},
        rules_out=["torch-npu-mismatch"],
    )


def _torch_build(torch_v: str, torch_cuda: object) -> Finding:
    if torch_cuda:
        return Finding(
            "cuda-torch-with-npu",
            f"torch {torch_v} is a CUDA {torch_cuda} build; torch_npu needs the CPU build",
            {"torch": torch_v, "torch_cuda": torch_cuda},
            confirms=["cuda-torch-with-npu"],
        )
    return Finding(
        "cpu-torch-with-npu",
        "torch is a CPU build, as torch_npu requires",
        {"torch": torch_v},
        rules_out=["cuda-torch-with-npu"],
    )


def _cann(m: dict[str, object]) -> Finding:
    if m["cann"] is None:
        return Finding(
            "cann-not-found",
            "torch_npu is installed but no CANN toolkit was found "
            "(ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, /usr/local/Ascend/ascend-toolkit/latest)",
            {k: m[k] for k in ("ascend_home_path", "ascend_toolkit_home")},
            confirms=["cann-missing"],
        )
    return Finding(
        "cann-found",
        f"CANN {m['cann']} ({m['cann_source']})",
        {"cann": m["cann"], "source": m["cann_source"]},
        rules_out=["cann-missing"],
    )


def body(ctx: ProbeContext) -> list[Finding]:
    m = matrix(ctx)
    return [Finding("versions", "version matrix", m), *checks(m)]


def main(argv: list[str] | None = None) -> int:
    return run_probe_main(NAME, VERSION, DESCRIPTION, body, argv)


if __name__ == "__main__":
    sys.exit(main())
