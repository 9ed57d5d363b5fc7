"""Errors that name what they are about: the name read from each template, and the cause it leads with."""

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
        "TypeError: init_multi_process_env() takes from 3 to 7 positional arguments but 8 were given",
        NamedFailure("arity", "init_multi_process_env", "init_multi_process_env"),
    ),
    ("TypeError: cast() got multiple values for argument '_semantic'", NamedFailure("twice", "_semantic", "cast")),
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
    (
        'Environment variable [HCCL_IF_IP] is invalid. Reason: it should be "ip[%ifname]".',
        NamedFailure("env", "HCCL_IF_IP"),
    ),
    (
        "Config_Error_Invalid_Environment_Variable(EI0001): Value 1000 for environment variable HCCL_RDMA_SL is "
        "invalid. Expected value: [0, 7]",
        NamedFailure("env", "HCCL_RDMA_SL"),
    ),
    (
        "[InitGroupStage][EnvConfig]set ifname to [abc] by HCCL_SOCKET_IFNAME, but not found",
        NamedFailure("env", "HCCL_SOCKET_IFNAME"),
    ),
    (
        "zmq.error.ZMQError: Address already in use (addr='tcp://x.x.x.x:30012')",
        NamedFailure("address", "tcp://x.x.x.x:30012"),
    ),
    ("OSError: [Errno 98] Address already in use", NamedFailure("address", "its port")),
    (
        "OSError: [Errno 30] Read-only file system: '/data0/pd/benchsite-releases/31b4584/third_party/cann-bench/reports'",
        NamedFailure("unwritable", "/data0/pd/benchsite-releases/31b4584/third_party/cann-bench/reports"),
    ),
    (
        '[rank5]: \tMissing key(s) in state_dict: "model.language_model.layers.0.mlp.experts.lora_A.default.weight", '
        '"model.language_model.layers.0.mlp.experts.lora_B.default.weight"',
        NamedFailure("checkpoint", "model.language_model.layers.0.mlp.experts.lora_A.default.weight"),
    ),
    (
        "size mismatch for visual.merger.mlp.0.weight: copying a param with shape torch.Size([5120, 5120]) from "
        "checkpoint, the shape in current model is torch.Size([3584, 5120]).",
        NamedFailure("checkpoint", "visual.merger.mlp.0.weight"),
    ),
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
        "set ifname to [eth0] by default, but not found",  # no variable named
        "[Errno 2] No such file or directory: '/data/model'",
        "PermissionError: [Errno 13] Permission denied: '/dev/davinci0'",  # a device node: the user's group
    ],
)
def test_other_errors_name_nothing(message):
    assert named_failure(message) is None


def test_every_template_has_a_cause_that_names_it_and_most_a_fix():
    for _, named in REAL:
        assert named.name in named.cause(0.5).title
        fix = named.fix()
        assert fix is None if named.kind == "none-attribute" else fix.addresses == [CAUSE_ID]


def _guess_of_traceback(scan_text, frame: str, code: str, error: str):
    """The safety net's guess for a one-frame traceback (`frame`: the file, line and function)."""
    result = scan_text(f"Traceback (most recent call last):\n  File {frame}\n    {code}\n{error}\n")
    return next(d for d in result.diagnoses if d.id == "unrecognised-error")


def _guess(scan_text, attribute: str):
    return _guess_of_traceback(
        scan_text,
        '"/usr/local/lib/python3.10/site-packages/vllm_ascend/ops/qwen2_decoder.py", line 88, in forward',
        f"mask = self.layers[0].{attribute}",
        f"AttributeError: 'AscendQwen2DecoderLayer' object has no attribute '{attribute}'",
    )


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


def test_a_family_rule_leads_with_the_name_its_line_gives(scan_text):
    # A family rule knows the kind (an API one side changed), the line which API: that leads its causes.
    result = scan_text("TypeError: _pad() got an unexpected keyword argument 'padding_side'\n")
    top = result.diagnoses[0]
    assert top.family and top.id == "family-api-version-skew"
    assert top.causes[0].id == CAUSE_ID and "`padding_side`" in top.causes[0].title
    assert top.causes[1:] and abs(sum(cause.probability for cause in top.causes) - 1.0) < 0.01


@pytest.mark.parametrize(
    ("frame", "code", "error", "name", "first_fix"),
    [
        # The port is the job's own: no release of the package that raised the error frees it, so the
        # template's fix comes before vLLM's update.
        (
            '"/usr/local/lib/python3.10/site-packages/vllm/entrypoints/openai/api_server.py", line 1060, in run_server',
            "sock.bind(addr)",
            "OSError: [Errno 98] Address already in use (addr='0.0.0.0:8000')",
            "0.0.0.0:8000",
            "Free the port, or give this instance its own",
        ),
        # cann/cann-bench#154 (a train case) could not write its reports directory, another path: both
        # read `<path>` once masked, which is no name they share, so this failure's own path leads.
        (
            '"/opt/app/eval.py", line 12, in <module>',
            "open(out, 'w')",
            "OSError: [Errno 30] Read-only file system: '/data0/reports/run1.json'",
            "/data0/reports/run1.json",
            "Write to a directory the job can write",
        ),
    ],
    ids=["port-before-update", "a-path-is-no-shared-name"],
)
def test_the_jobs_own_setting_port_or_path_leads_a_guess(scan_text, frame, code, error, name, first_fix):
    guess = _guess_of_traceback(scan_text, frame, code, error)
    assert guess.causes[0].id == CAUSE_ID and name in guess.causes[0].title
    assert [fix.title for fix in guess.fixes if fix.kind == "fix"][0] == first_fix
