"""Hatch build hook: the native line-shape table goes into the wheel, compiled for its platform.

An editable install builds it in place instead, next to its source, which the install imports.
Where no compiler works the wheel is pure Python, and the scanner runs its pure-Python path (same
results, slower): an install never fails for want of a compiler.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _native() -> Any:
    path = Path(__file__).resolve().parent / "scripts" / "build_native.py"
    spec = importlib.util.spec_from_file_location("build_native", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NativeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        native = _native()
        self._scratch = None if version == "editable" else tempfile.mkdtemp(prefix="triage-native-")
        try:
            built = native.build(native.SOURCE.parent if self._scratch is None else Path(self._scratch))
        except (OSError, subprocess.CalledProcessError) as exc:
            detail = exc.stderr if isinstance(exc, subprocess.CalledProcessError) else exc
            self.app.display_warning(f"native extension not built, the scan runs pure Python: {detail}")
            return
        if self._scratch is not None:
            build_data["force_include"][str(built)] = f"triage/engine/{built.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_scratch", None):
            shutil.rmtree(self._scratch, ignore_errors=True)
