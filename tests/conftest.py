from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from triage.engine.context import JobContext

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "logs_samples"

# Tests (and the CLIs they start) build their own KB cache instead of touching the user's, one
# for the whole run: xdist's workers share it, so that each KB set is built once, not once a worker.
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")
if _RUN:
    _CACHE = Path(tempfile.gettempdir()) / f"triage-test-cache-{_RUN}"
    _CACHE.mkdir(exist_ok=True)
    os.environ.setdefault("TRIAGE_CACHE_DIR", str(_CACHE))
else:
    os.environ.setdefault("TRIAGE_CACHE_DIR", tempfile.mkdtemp(prefix="triage-test-cache-"))


@pytest.fixture(scope="session")
def engine_kb():
    from triage.engine import load_engine_kb

    kb, errors = load_engine_kb([], strict=True)
    assert not errors
    return kb


@pytest.fixture(scope="session")
def prefilter(engine_kb):
    from triage.engine.prefilter import build_prefilter

    return build_prefilter(engine_kb)


@pytest.fixture
def scan_text(engine_kb, prefilter):
    from triage.engine import Scanner

    def scan(text: str, source: str = "test.log"):
        scanner = Scanner(engine_kb, prefilter=prefilter)
        scanner.feed_text(text, source)
        return scanner.result()

    return scan


@pytest.fixture(autouse=True)
def _no_user_kb(monkeypatch):
    # A developer's own TRIAGE_KB_PATH must not change what the tests see.
    monkeypatch.delenv("TRIAGE_KB_PATH", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    os.environ.setdefault("COLUMNS", "120")


def context_of(*lines: str) -> JobContext:
    """The job context the scan reads from these lines."""
    context = JobContext()
    for line in lines:
        context.observe(line)
    return context
