"""`triage kb migrate`: old extraction forms rewritten in place, once, with the rest of the file kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.cli.main import main
from triage.kb.loader import KBError, load_entry

OLD = """\
# a comment that stays
id: old-form
title: Old form
category: npu_oom
summary: An entry written before extraction took one form.
signatures:
  - regex: 'out of memory\\. Tried to allocate (?P<requested_bytes>[\\d.]+ GiB)'
    extract:
      total_bytes: '([\\d.]+ GiB) total capacity'
      op: "op=(\\\\w+)"
    extract_kind:
      requested_bytes: size
      total_bytes: size
    weight: 2.0  # this comment stays too
examples:
  match: ["out of memory. Tried to allocate 2.00 GiB (60.00 GiB total capacity) op=add"]
"""

NEW_SIGNATURE = """\
  - regex: 'out of memory\\. Tried to allocate (?P<requested_bytes>[\\d.]+ GiB)'
    extract:
      total_bytes: {regex: '([\\d.]+ GiB) total capacity', kind: size}
      op: {regex: "op=(\\\\w+)"}
      requested_bytes: {kind: size}
    weight: 2.0  # this comment stays too
"""


@pytest.fixture
def user_kb(tmp_path: Path) -> Path:
    (tmp_path / "npu_oom").mkdir()
    (tmp_path / "npu_oom" / "old-form.yaml").write_text(OLD)
    return tmp_path


def test_the_loader_refuses_the_old_form_and_names_the_command(user_kb: Path):
    with pytest.raises(KBError, match="run `triage kb migrate DIR`"):
        load_entry(user_kb / "npu_oom" / "old-form.yaml")


def test_migrate_rewrites_only_the_extraction_and_is_idempotent(user_kb: Path, capsys):
    path = user_kb / "npu_oom" / "old-form.yaml"
    assert main(["kb", "migrate", "--check", str(user_kb)]) == 1
    assert path.read_text() == OLD  # --check writes nothing
    assert main(["kb", "migrate", str(user_kb)]) == 0
    migrated = path.read_text()
    assert NEW_SIGNATURE in migrated and migrated.startswith("# a comment that stays\n")
    signature = load_entry(path).entry.signatures[0]
    assert {name: (e.regex, e.kind) for name, e in signature.extract.items()} == {
        "total_bytes": (r"([\d.]+ GiB) total capacity", "size"),
        "op": (r"op=(\w+)", "str"),
        "requested_bytes": (None, "size"),
    }
    capsys.readouterr()
    assert main(["kb", "migrate", str(user_kb)]) == 0
    assert path.read_text() == migrated
    assert "0 rewritten, 1 current" in capsys.readouterr().out


def test_a_group_kind_needs_the_group(tmp_path: Path):
    entry = tmp_path / "no-group.yaml"
    entry.write_text(OLD.replace("id: old-form", "id: no-group").replace("(?P<requested_bytes>", "("))
    assert main(["kb", "migrate", str(tmp_path)]) == 0
    with pytest.raises(KBError, match=r"has no group \(\?P<requested_bytes>"):
        load_entry(entry)


def test_hostile_files_are_refused_not_parsed(tmp_path: Path, capsys):
    (tmp_path / "bomb.yaml").write_text("a: &a [1, 2]\nb: [*a, *a]\n")
    (tmp_path / "huge.yaml").write_text("x: " + "y" * (300 << 10))
    assert main(["kb", "migrate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "aliases and anchors are not allowed" in err and "larger than 256 KB" in err
