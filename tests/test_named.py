"""Errors that name what is missing: the name read from each template, and the cause it leads with."""

from __future__ import annotations

import pytest

from triage.engine.named import CAUSE_ID, NamedFailure, named_failure

# Error lines as pasted in public threads (the real corpus's train split).
REAL = [
    (
        "AttributeError: 'AscendQwen2DecoderLayer' object has no attribute 'attention_type'",
        NamedFailure("attribute", "attention_type", "AscendQwen2DecoderLayer"),
    ),
    ("AttributeError: 'NoneType' object has no attribute 'dtype'", NamedFailure("none-attribute", "dtype")),
    (
        "AttributeError: module 'torch_npu' has no attribute 'npu_rotary_mul'",
        NamedFailure("module-attribute", "npu_rotary_mul", "torch_npu"),
    ),
    (
        "TypeError: Qwen2ForCausalLM.forward() got an unexpected keyword argument 'kv_caches'",
        NamedFailure("keyword", "kv_caches", "Qwen2ForCausalLM.forward"),
    ),
    (
        "npu_wrapper_preprocess.<locals>._preprocess() missing 1 required positional argument: 'interpolation'",
        NamedFailure("missing", "'interpolation'", "npu_wrapper_preprocess.<locals>._preprocess"),
    ),
    (
        "ImportError: cannot import name 'CUDAGraphMode' from 'vllm.config' (/vllm-workspace/vllm/vllm/config.py)",
        NamedFailure("import", "CUDAGraphMode", "vllm.config"),
    ),
    (
        "ImportError: cannot import name 'LLM' from 'vllm' (unknown location)",
        NamedFailure("shadowed", "LLM", "vllm"),
    ),
    ("ModuleNotFoundError: No module named 'torch_npu._C'", NamedFailure("module", "torch_npu._C")),
    ("NameError: name 'allow_same_symbol_in_index' is not defined", NamedFailure("name", "allow_same_symbol_in_index")),
    ("KeyError: 'visual.merger.linear_fc1.weight'", NamedFailure("key", "visual.merger.linear_fc1.weight")),
]


@pytest.mark.parametrize(("message", "expected"), REAL)
def test_each_template_gives_its_name_and_owner(message, expected):
    assert named_failure(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
        "KeyError",  # a bare KeyError names nothing
        "ValueError: The size of tensor a (40) must match the size of tensor b (80)",
    ],
)
def test_other_errors_name_nothing(message):
    assert named_failure(message) is None


def test_every_template_has_a_cause_that_names_it_and_most_a_fix():
    for _, named in REAL:
        assert named.name in named.cause(0.5).title
        fix = named.fix()
        assert fix is None if named.kind == "none-attribute" else fix.addresses == [CAUSE_ID]


def _guess(scan_text, attribute: str):
    result = scan_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/site-packages/vllm_ascend/ops/qwen2_decoder.py", line 88, in forward\n'
        f"    mask = self.layers[0].{attribute}\n"
        f"AttributeError: 'AscendQwen2DecoderLayer' object has no attribute '{attribute}'\n"
    )
    (guess,) = [d for d in result.diagnoses if d.id == "unrecognised-error"][:1]
    return guess


def test_a_name_no_known_failure_prints_leads_and_lent_fixes_for_other_names_are_dropped(scan_text):
    guess = _guess(scan_text, "rope_scaling_kind")
    assert guess.causes[0].id == CAUSE_ID and "`rope_scaling_kind`" in guess.causes[0].title
    fixes = [fix.title for fix in guess.fixes if fix.kind == "fix"]
    assert fixes == [
        "Upgrade vLLM-Ascend to a release that fixes this error",
        "Put `AscendQwen2DecoderLayer` and the code that reads `rope_scaling_kind` in step",
    ]
    assert "those of" not in guess.summary  # nothing is said to be lent


def test_a_known_failure_about_the_same_name_keeps_what_its_thread_found(scan_text):
    # vllm-project/vllm-ascend#11661 (a train case) printed this very name: its root cause stands.
    guess = _guess(scan_text, "attention_type")
    assert guess.causes[0].id.startswith("as-reported-") and "attention_type" in guess.causes[0].title
