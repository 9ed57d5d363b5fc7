"""Layout snapshots of the main screens at 80x24 and 160x48, against the fixture KB.

Regenerate with: PYTHONPATH=. python -m pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from tui_support import ROOT, make_app, settle

NARROW, WIDE = (80, 24), (160, 48)


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_main_screen(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=settle)


def test_help_screen(snap_compare):
    assert snap_compare(make_app(), terminal_size=NARROW, run_before=settle, press=["question_mark"])


def test_after_probe_rerank_wide(snap_compare):
    async def probe_second_cause(pilot):
        await settle(pilot)
        await pilot.press("down", "p")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=WIDE, run_before=probe_second_cause)


def test_light_theme_log_filtered_at_evidence(snap_compare):
    async def jump(pilot):
        await settle(pilot)
        await pilot.press("t", "f", "enter", "enter")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=NARROW, run_before=jump)
