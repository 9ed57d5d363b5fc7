"""`triage kb list/show/test/stats/validate` through the real argument parser."""

from __future__ import annotations

import json

from kb_helpers import entry_data, write_entry
from triage.cli.main import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_includes_user_entries(tmp_path, capsys):
    write_entry(tmp_path, entry_data("user-entry", category="npu_oom"))
    code, out, _ = run(capsys, "kb", "list", "--kb", str(tmp_path), "--json", "--category", "npu_oom")
    rows = json.loads(out)
    assert code == 0
    assert {
        "id": "user-entry",
        "category": "npu_oom",
        "title": "Synthetic user-entry",
        "severity": "error",
        "status": "experimental",
    } in rows
    assert all(row["category"] == "npu_oom" for row in rows)
    # A category no entry has is a typo to name, not an empty list.
    code, out, err = run(capsys, "kb", "list", "--category", "npu-oom")
    assert (code, out) == (2, "") and "no entry of category 'npu-oom'" in err and "npu_oom" in err


def test_user_dir_overrides_by_id_via_env(tmp_path, capsys, monkeypatch):
    write_entry(tmp_path, entry_data("user-entry"))
    monkeypatch.setenv("TRIAGE_KB_PATH", str(tmp_path))
    code, out, _ = run(capsys, "kb", "show", "user-entry")
    assert code == 0
    assert "Synthetic user-entry" in out and "Signatures:" in out and "Examples:" in out


def test_show_json_and_unknown_id(tmp_path, capsys):
    write_entry(tmp_path, entry_data("user-entry"))
    code, out, _ = run(capsys, "kb", "show", "user-entry", "--json", "--kb", str(tmp_path))
    assert code == 0 and json.loads(out)["id"] == "user-entry"
    code, _, err = run(capsys, "kb", "show", "no-such-entry")
    assert code == 2 and err.count("\n") == 1 and "no-such-entry" in err


SHIPPED_DESCRIBED_ONLY = 21


def test_stats_json_counts_user_entries(tmp_path, capsys):
    described = {"title": "Make the job smaller", "description": "Lower what one step holds."}
    write_entry(tmp_path, entry_data("user-entry", category="npu_oom", fixes=[described]))
    _, base, _ = run(capsys, "kb", "stats", "--json")
    code, out, _ = run(capsys, "kb", "stats", "--json", "--kb", str(tmp_path))
    before, after = json.loads(base), json.loads(out)
    assert code == 0
    assert after["entries"] == before["entries"] + 1
    assert after["by_category"]["npu_oom"] == before["by_category"].get("npu_oom", 0) + 1
    assert "user-entry" in after["without_references"]
    assert after["signatures_by_kind"]["text"] >= 1
    # The shipped KB's fixes, and how many cite where they were confirmed.
    fixes = before["fixes"]
    assert fixes["fix"] > fixes["with_proof"] > 0 and fixes["diagnostic"] > 0
    # A fix with nothing to copy (no command, setting or code) is counted; the shipped KB's may only fall
    # (37 before session 41, 24 after it).
    assert after["fixes"]["described_only"] == fixes["described_only"] + 1
    assert fixes["described_only"] <= SHIPPED_DESCRIBED_ONLY


def test_kb_test_reports_failures(tmp_path, capsys):
    write_entry(tmp_path, entry_data("good-entry"))
    write_entry(tmp_path, entry_data("bad-entry", examples={"match": ["unrelated text"]}))
    code, out, _ = run(capsys, "kb", "test", str(tmp_path))  # the directory's entries, over the shipped KB
    assert code == 1
    assert "pass good-entry" in out and "FAIL bad-entry" in out and "1 passed, 1 failed" in out


def test_validate_exit_codes_and_json(tmp_path, capsys):
    good, bad = tmp_path / "good", tmp_path / "bad"
    write_entry(good, entry_data("good-entry"))
    write_entry(bad, entry_data("bad-entry", examples={}))
    code, out, _ = run(capsys, "kb", "validate", str(good))
    assert code == 0 and out.splitlines()[-1].startswith("1 entry: 0 errors, ")
    code, out, _ = run(capsys, "kb", "validate", str(bad), "--json")
    report = json.loads(out)
    assert code == 1 and report["errors"] >= 1
    finding = next(f for f in report["findings"] if f["validator"] == "has_examples")
    assert finding["file"].endswith("bad-entry.yaml") and finding["severity"] == "error" and finding["line"]


def test_validate_missing_path_is_one_line(tmp_path, capsys):
    code, _, err = run(capsys, "kb", "validate", str(tmp_path / "missing"))
    assert code == 2 and err.count("\n") == 1


def test_validate_list(capsys):
    code, out, _ = run(capsys, "kb", "validate", "--list")
    assert code == 0 and "regex_safety" in out and "honeypot" in out


def test_kb_test_runs_the_dirs_and_ids_it_is_given(tmp_path, capsys):
    mine, other = tmp_path / "mine", tmp_path / "other"
    write_entry(mine, entry_data("mine-entry"))
    write_entry(other, entry_data("other-entry"))
    code, out, _ = run(capsys, "kb", "test", str(mine))
    assert code == 0 and out.splitlines() == ["pass mine-entry (2 examples)", "1 passed, 0 failed"]
    code, out, _ = run(capsys, "kb", "test", "--kb", str(other), "other-entry", "npu-out-of-memory")
    assert code == 0 and "2 passed, 0 failed" in out and "mine-entry" not in out


def test_kb_test_unknown_id_is_a_usage_error(capsys):
    code, _, err = run(capsys, "kb", "test", "no-such-entry")
    assert code == 2 and "no-such-entry" in err


def test_show_names_the_stacks_a_fix_is_for_and_the_corpus_case_that_confirms_it(capsys):
    code, out, _ = run(capsys, "kb", "show", "hccl-ej0001-hccp-init-failed")
    # LlamaFactory#3839 is a corpus case whose thread confirms the fix; #6646 is not in the corpus.
    assert code == 0
    assert "confirmed: https://github.com/hiyouga/LlamaFactory/issues/3839 (corpus case llamafactory-3839" in out
    assert "confirmed: https://github.com/hiyouga/LlamaFactory/issues/6646\n" in out
    _, out, _ = run(capsys, "kb", "show", "npu-out-of-memory")
    assert "only for: workload vllm" in out and "only for: workload sglang" in out


def test_show_says_a_stall_entry_counts_only_where_a_log_stops(capsys):
    code, out, _ = run(capsys, "kb", "show", "torch-extension-build-lock-hang")
    assert code == 0 and "stall: its signatures count only where a log that has stopped ends on them" in out
    assert "stall:" not in run(capsys, "kb", "show", "npu-out-of-memory")[1]


def test_show_says_a_culprit_fix_is_filled_in_at_scan_time(capsys):
    code, out, _ = run(capsys, "kb", "show", "family-npu-python-module-missing")
    assert code == 0
    at = out.index("Upgrade the package whose code raised the error")
    assert "at scan time: the package that raised the error" in out[at : at + 200]
