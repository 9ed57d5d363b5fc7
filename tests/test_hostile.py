"""Hostile inputs: each case runs the real CLI under a time and memory limit and must end cleanly,
with nothing that was found lost and no traceback. Fixtures live in tests/hostile/."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

HOSTILE = Path(__file__).resolve().parent / "hostile"
MEMORY_LIMIT = 2 << 30
"""Address space per case: the alias bomb alone used to reach 6.5 GB."""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def bounded_triage(*args: str, stdin: bytes = b"", timeout: float = 20) -> subprocess.CompletedProcess:
    """`triage ARGS` in a child that may use at most `timeout` seconds and MEMORY_LIMIT bytes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-m", "triage", *args], input=stdin, capture_output=True, env=env,
        timeout=timeout, preexec_fn=_limit_memory,
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def user_kb(name: str) -> list[str]:
    return ["--no-shipped-kb", "--kb", str(HOSTILE / name)]


# -- user KBs ---------------------------------------------------------------------------------------


def test_yaml_alias_bomb_is_refused_not_expanded():
    done = bounded_triage("scan", "--no-progress", *user_kb("kb_alias_bomb"), stdin=b"lol\n")
    assert b"aliases and anchors are not allowed" in done.stderr
    assert done.returncode == 2  # the only entry was refused: an empty KB is a usage error


def test_kb_validate_survives_an_alias_bomb():
    done = bounded_triage("kb", "validate", str(HOSTILE / "kb_alias_bomb"))
    assert done.returncode == 1 and b"aliases" in done.stdout + done.stderr


def test_oversized_kb_file_is_refused(tmp_path):
    from triage.kb.loader import MAX_ENTRY_BYTES, KBError, load_entry

    path = tmp_path / "big.yaml"
    path.write_text("id: big\n# " + "x" * MAX_ENTRY_BYTES + "\n")
    with pytest.raises(KBError, match="larger than"):
        load_entry(path)


def test_backtracking_user_regexes_are_refused_at_load_and_cannot_hang_a_scan():
    # Each pattern sits on a line crafted to make it backtrack; the safe entry must still fire.
    log = b"a" * 62 + b"\n" + b"x" * 40 + b"\n" + b"b" * 40 + b"\n" + b"RuntimeError: ZQX safe marker\n"
    done = bounded_triage("scan", "--no-progress", "--json", *user_kb("kb_redos"), stdin=log)
    warnings = done.stderr.decode()
    for entry in ("redos-alternation", "redos-adjacent", "redos-exclude", "redos-extract"):
        assert f"{entry}.yaml" in warnings, warnings
    assert done.returncode == 1 and b'"id": "safe-marker"' in done.stdout


@pytest.mark.parametrize("pattern", ["(a|aa)+$", "a*a*a*a*a*a*a*a*!", "(x+x+)+y", "((b+)+)c"])
def test_issue_patterns_are_unsafe(pattern):
    from triage.kb.regex_safety import unsafe_reason

    assert unsafe_reason(pattern)


@pytest.mark.parametrize("prefer", ["hyperscan", "re"])
def test_anchors_mean_line_boundaries(prefer):
    pytest.importorskip("hyperscan") if prefer == "hyperscan" else None
    from triage.engine import Scanner
    from triage.engine.compiled import compile_kb
    from triage.engine.prefilter import build_prefilter
    from triage.kb.loader import load_kb

    kb = compile_kb(load_kb([HOSTILE / "kb_anchored"])[0])
    scanner = Scanner(kb, prefilter=build_prefilter(kb, prefer=prefer))
    scanner.feed_text("step 1\nFATAL ZQX anchored failure\nstep 2\n", "job.log")
    assert [d.id for d in scanner.result().diagnoses] == ["anchored"]
