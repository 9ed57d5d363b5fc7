"""Compile the native line-shape table (triage/engine/_lineshapes.c) with the compiler Python was built with.

Usage: python scripts/build_native.py

Builds it in place, next to its source, where a checkout's tests import it (.ci/run does this after
installing). The wheel build (hatch_build.py) calls `build` with a folder of its own. Where no
compiler works the scanner runs its pure-Python path, with the same results, slower.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "triage" / "engine" / "_lineshapes.c"


def build(out_dir: Path) -> Path:
    """The compiled extension in out_dir. Raises OSError or CalledProcessError without a compiler."""
    target = out_dir / ("_lineshapes" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    # LDSHARED compiles and links a loadable module in one step, with the platform's flags for it.
    linker = shlex.split(sysconfig.get_config_var("LDSHARED") or "cc -shared")
    include = sysconfig.get_paths()["include"]
    command = [*linker, "-O2", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(target)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return target


def main() -> int:
    try:
        print(build(SOURCE.parent))
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr if isinstance(exc, subprocess.CalledProcessError) else exc
        print(f"native extension not built: {detail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
