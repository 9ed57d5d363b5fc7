"""Whose code raised an unknown error, and the update offered for it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import context_of
from triage.cli.main import main
from triage.engine.context import JobContext
from triage.engine.culprit import CAUSE_ID, culprit, culprit_advice
from triage.results import EvidenceLine


def _frames(*paths: str) -> list[EvidenceLine]:
    return [
        EvidenceLine(source="job.log", line=number, text=f'File "{path}", line 10, in run')
        for number, path in enumerate(paths, start=2)
    ]


def test_the_deepest_package_frame_names_the_culprit_and_plumbing_is_passed_over():
    frames = _frames(
        "/usr/lib/python3.10/runpy.py",
        "/usr/local/lib/python3.10/site-packages/vllm_ascend/worker/model_runner_v1.py",
        "/usr/local/lib/python3.10/site-packages/transformers/modeling_utils.py",
        "/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py",
    )
    package, how = culprit(frames, EvidenceLine(source="job.log", line=9, text="KeyError: 'x'"), JobContext())
    assert package.name == "transformers"
    assert "modeling_utils.py" in how


def test_frames_after_the_error_line_belong_to_another_traceback():
    frames = _frames("/opt/venv/lib/python3.11/site-packages/verl/workers/fsdp_workers.py")
    frames += [
        EvidenceLine(source="job.log", line=20, text='File "/opt/venv/site-packages/peft/tuners/lora.py", line 3, in f')
    ]
    package, _ = culprit(frames, EvidenceLine(source="job.log", line=5, text="ValueError: bad"), JobContext())
    assert package.name == "verl"


def test_a_source_checkout_is_named_by_its_package_directory():
    frames = _frames("/vllm-workspace/vllm-ascend/vllm_ascend/ops/fused_moe.py")
    package, _ = culprit(frames, None, JobContext())
    assert package.name == "vLLM-Ascend"


def test_without_frames_the_running_framework_is_the_culprit():
    package, how = culprit([], None, context_of("llama.cpp/ggml/src/ggml-cann/aclnn_ops.cpp:12: CANN error"))
    assert package.name == "llama.cpp" and how == "the log shows it running"
    assert any("GGML_CANN" in command for command in package.commands)


def test_no_package_and_no_framework_means_no_update_is_offered():
    assert culprit_advice(_frames("train.py", "/usr/lib/python3.10/threading.py"), None, JobContext()) == (None, [])


def test_an_unknown_error_in_a_packages_code_is_offered_its_update(scan_text):
    result = scan_text(
        "Traceback (most recent call last):\n"
        '  File "/root/train.py", line 3, in <module>\n'
        '  File "/usr/local/lib/python3.10/site-packages/frobnicate/core.py", line 88, in spin\n'
        "FrobnicatorError: the quantum frobnicator overflowed its widget budget\n"
    )
    guess = result.diagnoses[0]
    assert guess.causes[0].id == CAUSE_ID and guess.causes[0].title.startswith("frobnicate does not fit")
    assert guess.causes[1].id == "unknown"
    fixes = [fix for fix in guess.fixes if fix.kind == "fix"]
    assert fixes[0].title == "Upgrade frobnicate to a release that fixes this error"
    assert fixes[0].commands == ["pip install -U frobnicate"]
    assert "core.py" in fixes[0].description


def test_vllm_on_an_npu_is_updated_with_its_plugin_as_one_release_line():
    package, _ = culprit(_frames("/usr/local/lib/python3.11/site-packages/vllm/v1/engine/core.py"), None, JobContext())
    assert package.name == "vLLM and vLLM-Ascend"
    assert "pip install vllm==X vllm-ascend==X" in package.commands


FOO_IMPORT = """\
id: foo-import-skew
title: foo cannot import a name from bar
category: env_version
summary: Two packages of different releases.
signatures:
  - regex: "ImportError: cannot import name 'baz' from 'bar'"
    weight: 2.0
causes:
  - id: version-skew
    title: foo and bar come from different releases
fixes:
  - title: Pin bar to the release foo lists
    addresses: [version-skew]
  - title: Upgrade the package whose code raised the error
    addresses: [version-skew]
    culprit: true
"""


def test_a_culprit_fix_names_the_package_that_raised_and_is_left_out_without_one(tmp_path, capsys):
    kb = tmp_path / "kb"
    (kb / "env_version").mkdir(parents=True)
    (kb / "env_version" / "foo-import-skew.yaml").write_text(FOO_IMPORT)
    error = "ImportError: cannot import name 'baz' from 'bar' (/usr/lib/python3.10/site-packages/bar/__init__.py)"
    raised = tmp_path / "raised.log"
    raised.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/foo/loader.py", line 3, in <module>\n'
        "    from bar import baz\n" + error + "\n"
    )
    bare = tmp_path / "bare.log"
    bare.write_text(error + "\n")

    def fixes(log: Path) -> list[dict]:
        main(["scan", "--json", "--no-shipped-kb", "--kb", str(kb), str(log)])
        (diagnosis,) = [d for d in json.loads(capsys.readouterr().out)["diagnoses"] if d["id"] == "foo-import-skew"]
        return diagnosis["fixes"]

    pin, upgrade = fixes(raised)
    assert pin["title"] == "Pin bar to the release foo lists"
    assert upgrade["title"] == "Upgrade foo to a release that fixes this error"
    assert upgrade["commands"] == ["pip install -U foo"] and upgrade["addresses"] == ["version-skew"]
    assert [fix["title"] for fix in fixes(bare)] == ["Pin bar to the release foo lists"]
