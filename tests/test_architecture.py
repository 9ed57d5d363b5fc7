"""The import contracts in pyproject.toml: one engine, faces kept apart (checked by import-linter)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports") or os.path.join(os.path.dirname(sys.executable), "lint-imports")
    if not os.path.exists(lint):
        pytest.skip("import-linter is not installed (it comes with the dev extra)")
    proc = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout[-2000:]
