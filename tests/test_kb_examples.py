"""Every KB entry is tested by its own examples."""

from __future__ import annotations

import pytest

from triage.kb.loader import load_kb
from triage.kb.paths import shipped_kb_dir

KB, _ = load_kb([shipped_kb_dir()])
ENTRIES = sorted(KB.entries.values(), key=lambda e: e.id)


@pytest.fixture(scope="module")
def checker(engine_kb, prefilter):
    from triage.kbtools.examples import ExampleChecker

    return ExampleChecker(engine_kb, prefilter)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_examples_behave(entry, checker):
    assert entry.examples.match, f"{entry.id} has no match examples"
    failures = checker.failures(entry)
    assert not failures, "\n".join(f"{f.kind}[{f.index}]: {f.message}" for f in failures)


def test_every_category_has_an_entry():
    from triage.kb.models import CATEGORIES

    present = {entry.category for entry in ENTRIES}
    assert set(CATEGORIES) <= present, f"missing: {sorted(set(CATEGORIES) - present)}"


def test_schema_is_fresh():
    from triage.kb.schema import schema_text

    on_disk = (shipped_kb_dir() / "schema.json").read_text(encoding="utf-8")
    assert on_disk == schema_text(), "kb/schema.json is stale: run `python -m triage.kb.schema`"


def test_an_example_must_also_match_as_a_launcher_prints_it(tmp_path):
    # `\A` is the string's start, which no launcher's prefix leaves where it was: such an entry misses
    # every line of a multi-rank job, and its examples say so.
    from kb_helpers import entry_data, write_entry

    from triage.engine import load_engine_kb
    from triage.kbtools.examples import ExampleChecker

    for entry_id, anchor in (("at-line-start", r"\A"), ("after-prefixes", "^")):
        marker = f"ZQX {entry_id} failure"
        write_entry(
            tmp_path,
            entry_data(entry_id, signatures=[{"regex": anchor + marker, "weight": 3}], examples={"match": [marker]}),
        )
    kb, errors = load_engine_kb([str(tmp_path)], include_shipped=False)
    assert not errors
    models, _ = load_kb([tmp_path])
    checker = ExampleChecker(kb)
    assert [f.message for f in checker.failures(models.entries["at-line-start"])] == [
        "expected top 'at-line-start' as a torchrun rank's line, got nothing"
    ]
    assert checker.failures(models.entries["after-prefixes"]) == []
