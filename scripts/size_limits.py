"""Fail when a module is over 400 lines or a function over 60: past that, a piece has more than one job.

Usage: python scripts/size_limits.py [PATH ...] (default: triage probes scripts bench). Run by .ci/run.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
DEFAULT_ROOTS = ("triage", "probes", "scripts", "bench")


def oversized(path: Path) -> list[str]:
    """One line per limit `path` breaks."""
    text = path.read_text(encoding="utf-8")
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{path}: {lines} lines (module limit {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{path}:{node.lineno}: {node.name} is {length} lines (function limit {MAX_FUNCTION_LINES})"
                )
    return found


def main(argv: list[str]) -> int:
    roots = [Path(arg) for arg in argv] or [Path(root) for root in DEFAULT_ROOTS]
    files = sorted(f for root in roots for f in ([root] if root.is_file() else root.rglob("*.py")))
    problems = [problem for path in files for problem in oversized(path)]
    print(
        "\n".join(problems)
        or f"{len(files)} files within {MAX_MODULE_LINES} lines, functions within {MAX_FUNCTION_LINES}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
