"""A contributor's first entry on an installed triage: nothing may be written into the package.

The package is laid out as the wheel lays it out (pyproject's packages and force-include), in a
directory standing for site-packages, and run from a clean working directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

LOG = """\
2025-03-02 08:15:01 INFO trainer.py:412] step 120 | loss 1.8421 | lr 2.0e-05 | 5.3 it/s
[rank0]: RuntimeError: frobnicator queue overflow on stage 3 (depth 4096)
"""


def install_like_the_wheel(site: Path) -> None:
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in wheel["packages"]:
        shutil.copytree(ROOT / package, site / package, ignore=ignore)
    for source, target in wheel["force-include"].items():
        shutil.copytree(ROOT / source, site / target, ignore=ignore)


def tree(root: Path) -> dict[str, int]:
    return {str(path.relative_to(root)): path.stat().st_mtime_ns for path in root.rglob("*")}


def test_kb_new_validate_test_and_scan_without_out(tmp_path):
    site, work = tmp_path / "site-packages", tmp_path / "work"
    install_like_the_wheel(site)
    work.mkdir()
    (work / "x.log").write_text(LOG)
    before = tree(site)
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_KB_PATH", "PYTHONPATH")}
    # The run's KB cache (conftest): its compiled databases are keyed by content, so the copy reuses them.
    env |= {"PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}

    def python(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=work, env=env, capture_output=True, text=True, timeout=120)

    def triage(*args: str) -> subprocess.CompletedProcess[str]:
        return python("-m", "triage", *args)

    where = python("-c", "from triage.kb.paths import shipped_kb_dir; print(shipped_kb_dir())").stdout.strip()
    assert Path(where) == site / "triage" / "_kb"  # the copy runs, not the checkout

    new = triage("kb", "new", "--from", "x.log")
    assert new.returncode == 0, new.stderr
    assert new.stdout.startswith("wrote kb-local/other/")
    validate = triage("kb", "validate", "kb-local")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "skipped" not in validate.stderr  # the healthy and honeypot logs ship in the package
    test = triage("kb", "test", "kb-local")
    assert test.returncode == 0 and test.stdout.endswith("1 passed, 0 failed\n"), test.stdout
    scan = triage("scan", "--kb", "kb-local", "x.log")
    assert scan.returncode == 1 and "frobnicator-queue-overflow" in scan.stdout, scan.stderr
    assert tree(site) == before
