"""`triage kb import-ascend-fd` on a small synthetic kg-config.json (no Huawei data)."""

from __future__ import annotations

from pathlib import Path

import yaml

from triage.cli.main import main
from triage.kbtools.ascend_fd import fixes, import_kg_config
from triage.kbtools.samples import Baselines
from triage.kbtools.validate import run_validators

FIXTURE = Path(__file__).parent / "fixtures" / "ascend_fd" / "kg-config.json"


def load(out: Path, category: str, entry_id: str) -> dict:
    return yaml.safe_load((out / category / f"{entry_id}.yaml").read_text())


def test_import_converts_patterns_titles_fixes_and_links(tmp_path):
    result = import_kg_config(FIXTURE, tmp_path)
    assert len(result.written) == 4
    assert list(result.skipped.values()) == [["Comp_Test_Custom_05"]]

    op = load(tmp_path, "unsupported_op", "ascend-fd-aisw-test-train-01")
    assert op["title"] == "Zorblax operator is not supported" and op["status"] == "experimental"
    assert op["signatures"] == [{"regex": "ZORBLAX operator.*is not supported on backend QUUX"}]
    assert op["fixes"][1] == {"title": "Upgrade the synthetic toolkit:", "description": "pip install synthetic-toolkit"}
    assert op["related"] == ["ascend-fd-aisw-test-hccl-02"]

    hccl = load(tmp_path, "hccl_timeout", "ascend-fd-aisw-test-hccl-02")
    assert len(hccl["signatures"]) == 2

    wrapper = load(tmp_path, "segfault", "ascend-fd-aisw-test-errcode-common")
    assert wrapper["generic"] is True and wrapper["signatures"] == [{"regex": "QX[0-9]{4}Z"}]

    port = load(tmp_path, "segfault", "ascend-fd-0x8fff0001")
    assert port["signatures"] == [{"text": "0x8FFF0001"}] and port["severity"] == "critical"


def test_imported_entries_validate(tmp_path):
    import_kg_config(FIXTURE, tmp_path)
    report = run_validators([tmp_path], [], Baselines())
    errors = [(f.entry_id, f.validator) for f in report.findings if f.severity == "error"]
    # A regex-only fault has no keywords to build an example from: validation asks for one.
    assert errors == [("ascend-fd-aisw-test-errcode-common", "has_examples")]


def test_reimport_keeps_edited_files_unless_forced(tmp_path):
    import_kg_config(FIXTURE, tmp_path)
    again = import_kg_config(FIXTURE, tmp_path)
    assert not again.written and len(again.existing) == 4
    assert len(import_kg_config(FIXTURE, tmp_path, force=True).written) == 4


def test_numbered_suggestions_become_fixes():
    assert fixes(["1. Do a.", "  cmd --x", "2) Do b."]) == [
        {"title": "Do a.", "description": "cmd --x"},
        {"title": "Do b."},
    ]


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "kg-config.json"
    bad.write_text("{not json")
    assert main(["kb", "import-ascend-fd", str(bad), "--out", str(tmp_path / "kb")]) == 2
    assert main(["kb", "import-ascend-fd", str(FIXTURE)]) == 2  # no --out and no TRIAGE_KB_PATH
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "not a JSON file" in err and "--out" in err


def test_cli_writes_into_the_user_dir(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRIAGE_KB_PATH", str(tmp_path))
    assert main(["kb", "import-ascend-fd", str(FIXTURE)]) == 0
    assert "wrote 4 entries" in capsys.readouterr().out


def test_odd_shapes_in_a_hand_edited_file_are_skipped_not_a_traceback(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    config = tmp_path / "kg-config.json"
    faults = {
        "BAD_REGEX": {"regex": "abc", "attribute": "x", "rule": ["y"]},
        "ONE_WORD": {"regex": {"in": "Timeout"}, "attribute": {"name_en": "A timeout"}},
        "BAD_OPT": {"regex": {"opt": ["not a dict"]}},
    }
    config.write_text(json.dumps({"knowledge-repository": faults}))
    proc = subprocess.run(
        [sys.executable, "-m", "triage", "kb", "import-ascend-fd", str(config), "--out", str(tmp_path / "kb")],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    written = list((tmp_path / "kb").rglob("*.yaml"))
    assert any("one-word" in p.name for p in written)
    assert all("T.*i.*m" not in p.read_text() for p in written)
