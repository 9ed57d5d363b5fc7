"""`triage kb validate`: each validator rejects its bad case and passes a clean one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_helpers import entry_data, write_entry
from triage.kb.regex_safety import unsafe_reason
from triage.kbtools.samples import Baselines, load_baselines
from triage.kbtools.validate import run_validators

NO_BASELINES = Baselines()


def validate(*paths: Path, baselines: Baselines = NO_BASELINES):
    # Context = the targets only, so the shipped KB's content cannot change these results.
    return run_validators(list(paths), [], baselines)


def errors_of(report, validator: str):
    return [f for f in report.findings if f.validator == validator and f.severity == "error"]


def test_clean_entry_passes(tmp_path):
    write_entry(tmp_path, entry_data("clean-entry"))
    report = validate(tmp_path)
    assert report.errors == 0, [str(f) for f in report.findings]
    assert report.entries == 1


def test_duplicate_id_in_one_dir_is_an_error(tmp_path):
    write_entry(tmp_path, entry_data("twice"))
    write_entry(tmp_path, entry_data("twice", category="npu_oom"))
    found = errors_of(validate(tmp_path), "unique_id")
    assert len(found) == 1 and "duplicate id 'twice'" in found[0].message
    assert found[0].line == 1


def test_user_dir_may_override_a_shipped_id(tmp_path, monkeypatch):
    shipped, user = tmp_path / "shipped", tmp_path / "user"
    write_entry(shipped, entry_data("same-id"))
    write_entry(user, entry_data("same-id", title="User version"))
    monkeypatch.setattr("triage.kbtools.validators.shipped_kb_dir", lambda: shipped)
    report = validate(shipped, user)
    assert not [f for f in report.findings if f.validator == "unique_id"]
    # The shipped copy is replaced at scan time, so its examples are not held against it.
    assert any(f.severity == "info" and "overridden" in f.message for f in report.findings)
    assert report.errors == 0


def test_file_name_must_equal_id(tmp_path):
    path = write_entry(tmp_path, entry_data("real-id"), name="other-name")
    found = errors_of(validate(tmp_path), "file_name")
    assert len(found) == 1 and found[0].path == path and "other-name" in found[0].message


def test_category_folder_must_equal_category(tmp_path):
    write_entry(tmp_path, entry_data("misfiled"), folder="npu_oom")
    assert errors_of(validate(tmp_path), "category_folder")


def test_a_causes_own_category_must_be_a_known_one(tmp_path):
    data = entry_data("cause-category", causes=[{"id": "rejected-op", "title": "T", "category": "unsupported"}])
    write_entry(tmp_path, data)
    [finding] = [f for f in validate(tmp_path).findings if f.validator == "known_category"]
    assert "cause 'rejected-op'" in finding.message and "'unsupported'" in finding.message


@pytest.mark.parametrize(
    ("evidence", "flagged"),
    [
        ("dcmi module initiali", True),  # a stem: cause evidence counts as whole words, so never on 'initialize'
        ("SetDevice", True),  # inside 'rtSetDevice'
        ("dcmi module initiali[sz]e", False),
        ("(?:aclrt|rt)?SetDevice", False),
    ],
)
def test_cause_evidence_that_finds_an_example_only_inside_a_word_is_an_error(tmp_path, evidence, flagged):
    marker = "ZQX-STEM synthetic failure"
    data = entry_data(
        "stem-evidence",
        causes=[{"id": "device-not-passed", "title": "T", "prior": 1.0, "evidence": [{"regex": evidence}]}],
        examples={
            "match": [f"RuntimeError: {marker}\ndcmi module initialize failed. rtSetDevice execute failed"],
            "no_match": ["step 1 | loss 0.5"],
        },
    )
    data["signatures"] = [{"text": marker, "weight": 3}]
    write_entry(tmp_path, data)
    found = errors_of(validate(tmp_path), "cause_evidence_words")
    assert bool(found) is flagged
    if flagged:
        assert "cause 'device-not-passed'" in found[0].message and "only inside a word" in found[0].message


def test_catastrophic_regex_is_rejected_with_its_line(tmp_path):
    data = entry_data("bad-regex")
    data["signatures"].append({"regex": "(a+)+$"})
    write_entry(tmp_path, data)
    found = errors_of(validate(tmp_path), "regex_safety")
    assert len(found) == 1 and "(a+)+$" in found[0].message
    lines = (tmp_path / "segfault" / "bad-regex.yaml").read_text().splitlines()
    assert "(a+)+$" in lines[found[0].line - 1]


def test_a_regex_that_reads_a_long_line_once_from_each_character_is_a_warning(tmp_path):
    data = entry_data("slow-regex")
    data["signatures"].append({"regex": r"\d+\s*GB of HBM"})
    write_entry(tmp_path, data)
    [finding] = [f for f in validate(tmp_path).findings if f.validator == "long_line"]
    assert finding.severity == "warning" and "a 16 KB line of digits" in finding.message
    assert r"(?<!\w)" in finding.message


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(a*)*", "(a|a)*", "(.*)*", r"(\w+\s?)+", r"x(?:\d+)*y", r"(a{1,3})+", r"(ab) \1"]
)
def test_unsafe_patterns(pattern):
    assert unsafe_reason(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"NPU out of memory\. Tried to allocate (?P<b>[\d.]+ [KMGT]?i?B)",
        r"(?:[\w.-]+/)+\w+\.py",
        r"(\d{1,3}\.){3}\d{1,3}",
        r"x(?:\S+\s+)+y",
        r"EZ\d{4}.*failed",
        r"(foo|bar)+",
    ],
)
def test_safe_patterns(pattern):
    assert unsafe_reason(pattern) is None


def test_entry_without_examples_is_an_error(tmp_path):
    write_entry(tmp_path, entry_data("no-examples", examples={}))
    assert errors_of(validate(tmp_path), "has_examples")


def test_failing_example_is_an_error(tmp_path):
    write_entry(tmp_path, entry_data("wrong-example", examples={"match": ["nothing to see here"]}))
    found = errors_of(validate(tmp_path), "examples")
    assert found and "match[0]" in found[0].message


def test_stable_entry_needs_references(tmp_path):
    write_entry(tmp_path, entry_data("stable-entry", status="stable"))
    assert errors_of(validate(tmp_path), "references")


def _samples(tmp_path: Path, healthy: str, honeypot: str) -> Baselines:
    samples = tmp_path / "logs_samples"
    samples.mkdir()
    (samples / "healthy.log").write_text(healthy)
    (samples / "honeypot.log").write_text(honeypot)
    (samples / "labels.yaml").write_text(
        "- {file: healthy.log, healthy: true}\n- {file: logs_samples/honeypot.log, honeypot: true}\n"
    )
    return load_baselines(samples)


def test_entry_that_fires_on_a_healthy_log_is_an_error(tmp_path):
    kb = tmp_path / "kb"
    write_entry(
        kb, entry_data("too-eager", signatures=[{"regex": r"loss \d", "weight": 3}], examples={"match": ["loss 1"]})
    )
    write_entry(kb, entry_data("quiet"))
    baselines = _samples(tmp_path, "step 1 | loss 2.31 | lr 1e-4\n", "error: something failed\n")
    found = errors_of(validate(kb, baselines=baselines), "healthy_logs")
    assert [f.entry_id for f in found] == ["too-eager"]
    assert "healthy.log:1" in found[0].message


def test_confident_hit_on_the_honeypot_is_an_error(tmp_path):
    kb = tmp_path / "kb"
    write_entry(kb, entry_data("weak", signatures=[{"text": "failed", "weight": 3}], examples={"match": ["it failed"]}))
    baselines = _samples(tmp_path, "all good\n", "error: something failed\n")
    assert [f.entry_id for f in errors_of(validate(kb, baselines=baselines), "honeypot")] == ["weak"]


def test_missing_labels_are_a_note_not_an_error(tmp_path):
    write_entry(tmp_path / "kb", entry_data("clean-entry"))
    baselines = load_baselines(tmp_path / "nowhere")
    report = validate(tmp_path / "kb", baselines=baselines)
    assert report.errors == 0 and "labels.yaml not found" in report.notes[0]


def test_labels_fragments_are_read(tmp_path):
    samples = tmp_path / "logs_samples"
    (samples / "healthy").mkdir(parents=True)
    (samples / "healthy" / "a.log").write_text("ok\n")
    (samples / "labels-kb-a.yaml").write_text("logs:\n  - {path: healthy/a.log, healthy: true}\n")
    assert load_baselines(samples).healthy == [samples / "healthy" / "a.log"]


def test_overlapping_entries_are_a_warning(tmp_path):
    write_entry(tmp_path, entry_data("broad", signatures=[{"text": "synthetic failure", "weight": 1}]))
    write_entry(tmp_path, entry_data("narrow"))
    found = [f for f in validate(tmp_path).findings if f.validator == "overlap"]
    assert [(f.entry_id, f.severity) for f in found] == [("narrow", "warning")]
    assert "'broad'" in found[0].message


def test_exclusion_with_a_reason_skips_the_check(tmp_path):
    exclusion = {"exclude": [{"validator": "has_examples", "reason": "fires only together with its parent entry"}]}
    write_entry(tmp_path, entry_data("excluded", examples={}, validation=exclusion))
    report = validate(tmp_path)
    assert report.errors == 0 and report.excluded == 1


def test_exclusion_needs_a_reason_and_a_known_validator(tmp_path):
    write_entry(tmp_path, entry_data("no-reason", validation={"exclude": [{"validator": "examples", "reason": " "}]}))
    write_entry(tmp_path, entry_data("unknown", validation={"exclude": [{"validator": "schema", "reason": "why not"}]}))
    report = validate(tmp_path)
    assert [f.validator for f in report.findings if f.severity == "error"] == ["schema", "exclusions"]


def test_malformed_yaml_is_a_schema_finding_with_a_line(tmp_path):
    bad = tmp_path / "segfault" / "broken.yaml"
    bad.parent.mkdir()
    bad.write_text("id: broken\nid: again\n")
    found = errors_of(validate(tmp_path), "schema")
    assert found and found[0].line == 2 and "duplicate key" in found[0].message


def test_draft_is_a_warning_and_strict_refuses_it(tmp_path):
    write_entry(tmp_path, entry_data("unfinished", status="draft", summary="TODO: say what it means"))
    relaxed = validate(tmp_path)
    assert relaxed.errors == 0 and {f.validator for f in relaxed.findings} == {"draft", "placeholders"}
    strict = run_validators([tmp_path], [], NO_BASELINES, strict=True)
    assert sorted(f.validator for f in strict.findings if f.severity == "error") == ["draft", "placeholders"]


def test_todos_in_a_non_draft_entry_are_an_error(tmp_path):
    write_entry(tmp_path, entry_data("pretends", summary="TODO: say what it means"))
    assert "set status: draft" in errors_of(validate(tmp_path), "placeholders")[0].message


def test_a_draft_cannot_exclude_the_strict_checks(tmp_path):
    exclusion = {"exclude": [{"validator": "draft", "reason": "ship it anyway"}]}
    write_entry(tmp_path, entry_data("sneaky", status="draft", validation=exclusion))
    assert errors_of(validate(tmp_path), "exclusions")


def test_a_pattern_that_matches_a_harmless_line_is_found(tmp_path):
    samples = tmp_path / "logs_samples"
    (samples / "harmless").mkdir(parents=True)
    (samples / "harmless" / "warnings.log").write_text(
        "[W compiler_depend.ts:51] Warning: Device do not support double dtype now\ntokens/s=507035\n"
    )
    (samples / "labels-harmless.yaml").write_text("- {file: harmless/warnings.log, harmless: true}\n")
    baselines = load_baselines(samples)
    assert baselines.harmless == baselines.healthy == [samples / "harmless" / "warnings.log"]
    kb = tmp_path / "kb"
    cause = {
        "id": "busy",
        "title": "Busy",
        "how_to_tell": "compiling",
        "evidence": [{"regex": "double dtype", "weight": 0.5}],
    }
    write_entry(kb, entry_data("loose-cause", causes=[cause]))
    write_entry(
        kb,
        entry_data(
            "bare-code", signatures=[{"regex": r"\b507035\b", "weight": 2}], examples={"match": ["error code 507035"]}
        ),
    )
    # Whole words in their declared case: not `compiler_depend.ts`; a bare code only in an error context.
    cause = {**cause, "evidence": [{"regex": "[Cc]ompil(?:e|ing)", "weight": 0.5}]}
    write_entry(kb, entry_data("word-cause", causes=[cause]))
    write_entry(
        kb,
        entry_data(
            "loose-signature",
            signatures=[{"regex": "double dtype", "weight": 2}],
            examples={"match": ["double dtype crash"]},
        ),
    )
    report = validate(kb, baselines=baselines)
    # A signature is an error; cause evidence a warning: it counts only near the entry's own lines,
    # where context such as a dtype banner is what it is for.
    assert [f.entry_id for f in errors_of(report, "harmless_lines")] == ["loose-signature"]
    found = [f for f in report.findings if f.validator == "harmless_cause_lines"]
    assert [(f.entry_id, f.severity) for f in found] == [("loose-cause", "warning")]
    assert "cause 'busy' evidence" in found[0].message and "warnings.log:1" in found[0].message


def test_a_fix_that_sets_a_torch_npu_setting_must_say_it_is_for_pytorch_jobs(tmp_path):
    fix = {"title": "Expandable segments", "env": {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}}
    write_entry(tmp_path, entry_data("torch-only", fixes=[fix]))
    assert "applies_to: {runtime: [torch]}" in errors_of(validate(tmp_path), "torch_fixes")[0].message
    write_entry(tmp_path, entry_data("torch-only", fixes=[{**fix, "applies_to": {"runtime": ["torch"]}}]))
    assert not errors_of(validate(tmp_path), "torch_fixes")
