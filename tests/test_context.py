"""The job context read from the log, and advice that fits it."""

from __future__ import annotations

from typing import get_args

import pytest

from tests.conftest import context_of
from triage.engine.advice import order_fixes
from triage.engine.context import VERSION_PATTERNS, JobContext, parse_stack, stack_text
from triage.kb.models import VersionedPackage
from triage.kb.versions import satisfies
from triage.results import CauseResult


def test_a_line_of_a_shape_read_before_counts_but_is_not_read_again(monkeypatch):
    import triage.engine.context as context_module
    from triage.engine.normalize import shape_key

    reads = []
    gate = context_module.gate_text
    monkeypatch.setattr(context_module, "gate_text", lambda text: reads.append(text) or gate(text))
    context = JobContext()
    lines = [
        "ERROR 03-20 11:08:38 [engine.py:212] Request chatcmpl-ecd16485-06a5-4e56-bbd5-7f9274b578db failed: torch_npu 2.5.1",
        "ERROR 03-20 11:09:41 [engine.py:212] Request chatcmpl-0f3a9b2c-1d4e-4f60-a1b2-c3d4e5f6a7b8 failed: torch_npu 2.6.0",
        "INFO 03-20 11:09:42 [worker.py:88] plain chatter, no context",
    ]
    for line in lines:
        context.observe(line, shape_key(line.encode()))
    assert len(reads) == 2  # the second request line is of the first one's shape
    assert context.lines_seen == 2 and context.versions == {"torch_npu": "2.5.1"}


def test_workload_launcher_versions_soc_and_env():
    context = context_of(
        'File "/usr/local/lib/python3.10/site-packages/vllm_ascend/worker/model_runner_v1.py", line 3, in load_model',
        "torchrun --nproc-per-node 8 serve.py",
        "torch_npu version: 2.5.1.post1  CANN version: 8.1.RC1",
        "[INFO] SocVersion = Ascend910B2",
        "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True",
    )
    assert context.workload == "vllm-ascend"
    assert context.launcher == "torchrun"
    assert context.versions["torch_npu"] == "2.5.1.post1" and context.versions["cann"] == "8.1.RC1"
    assert context.soc == "Ascend910B2"
    assert context.env == {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}
    assert context.shows("workload") >= {"vllm", "vllm-ascend", "serving"}


@pytest.mark.parametrize(
    ("line", "workload"),
    [
        ("[2026-08-26 01:05:32 TP1] Scheduler hit an exception: Traceback (most recent call last):", "sglang"),
        ("ERROR 06-04 05:01:35 [multiproc_executor.py:932] RuntimeError: Expected all tensors", "vllm"),
        ("triton.compiler.errors.MLIRCompilationError: [ConvertLinalgRToBinary] encounters error:", "triton-ascend"),
        (
            "subprocess.CalledProcessError: Command '['/usr/local/Ascend/bin/bishengir-compile', 'k.mlir']'",
            "triton-ascend",
        ),
        ("[F 2/ 9 15:51:16.910 ...pter/driver/huawei_ascend_npu/utility.cc:221] NNAdapter C++ Exception:", "paddle"),
        ('File "/usr/local/Ascend/atb-models/atb_llm/runner/model_runner.py", line 3, in load', "mindie"),
        ('File "/root/swift/swift/llm/infer/infer.py", line 3, in main', "ms-swift"),
    ],
)
def test_the_job_is_known_by_its_own_prefixes_paths_and_stages(line, workload):
    assert workload in context_of(line).workloads


def test_fine_tuning_tool_is_the_workload_over_its_trainer():
    context = context_of(
        "llamafactory-cli train examples/qwen.yaml", 'File "transformers/trainer.py", line 1, in train'
    )
    assert context.workload == "llamafactory"
    assert context.fits({"workload": ["training"]}) is True
    assert context.fits({"workload": ["sglang"]}) is False
    assert JobContext().fits({"workload": ["sglang"]}) is None


def test_vllm_on_torch_npu_is_vllm_ascend():
    worker = "(Worker_TP3 pid=221636) ERROR 11-20 02:28:06 [multiproc_executor.py:671] RuntimeError: x"
    on_npu = context_of(worker, "RunOpApiV2:torch_npu/csrc/framework/OpCommand.cpp:251 NPU function error")
    assert on_npu.workload == "vllm-ascend" and on_npu.to_json()["workloads"] == ["vllm", "vllm-ascend"]
    assert on_npu.fits({"workload": ["vllm-ascend"]}) is True and on_npu.fits({"workload": ["vllm"]}) is True
    assert on_npu.stack() == {"runtime": ["torch"], "workload": ["vllm"]}
    elsewhere = context_of(worker)
    assert elsewhere.workload == "vllm" and elsewhere.fits({"workload": ["vllm-ascend"]}) is False


def test_a_torch_job_that_names_no_workload_is_not_one_of_another_runtime():
    context = context_of('File "/usr/lib/python3.10/site-packages/torch_npu/utils/_error_code.py", line 4, in f')
    assert context.workloads == [] and context.runtime == "torch"
    assert context.fits({"workload": ["llama.cpp"]}) is False
    assert context.fits({"workload": ["paddle", "llama.cpp"]}) is False
    assert context.fits({"workload": ["llama.cpp", "vllm"]}) is None
    assert context_of("ggml_cann_init: device 0").fits({"workload": ["llama.cpp"]}) is True


def test_fixes_for_another_stack_are_dropped_and_applied_ones_said():
    causes = [CauseResult(id="budget", title="", probability=0.9), CauseResult(id="frag", title="", probability=0.1)]
    fixes = [
        {"title": "Lower the batch", "addresses": ["budget"], "applies_to": {"workload": ["training"]}},
        {"title": "Lower --mem-fraction-static", "addresses": ["budget"], "applies_to": {"workload": ["sglang"]}},
        {"title": "Lower --gpu-memory-utilization", "addresses": ["budget"], "applies_to": {"workload": ["vllm"]}},
        {"title": "Look at npu-smi", "addresses": ["budget"], "kind": "diagnostic"},
        {
            "title": "Expandable segments",
            "addresses": ["frag"],
            "env": {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"},
        },
    ]
    context = context_of("(VllmWorker rank=0 pid=1) INFO vllm serve", "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True")
    offered, notes = order_fixes(fixes, causes, context)
    assert [fix.title for fix in offered] == ["Lower --gpu-memory-utilization", "Look at npu-smi"]
    assert notes == [
        "already applied in this job (PYTORCH_NPU_ALLOC_CONF=expandable_segments:True): Expandable segments"
    ]


def test_where_the_log_shows_no_stack_fixes_for_any_stack_come_first():
    causes = [CauseResult(id="op-bug", title="", probability=0.7), CauseResult(id="index", title="", probability=0.3)]
    fixes = [
        {"title": "Upgrade vLLM-Ascend", "addresses": ["op-bug"], "applies_to": {"workload": ["vllm"]}},
        {"title": "Check index ranges", "addresses": ["index"]},
        {"title": "Upgrade torch_npu with its CANN", "addresses": ["op-bug"]},
    ]
    unknown = [fix.title for fix in order_fixes(fixes, causes, JobContext())[0]]
    assert unknown == ["Upgrade torch_npu with its CANN", "Check index ranges", "Upgrade vLLM-Ascend"]
    on_vllm = [fix.title for fix in order_fixes(fixes, causes, context_of("vllm serve /models/x"))[0]]
    assert on_vllm[0] == "Upgrade vLLM-Ascend"


def test_a_fix_keeps_only_the_command_lines_for_the_job_s_own_engine_or_runtime():
    causes = [CauseResult(id="pair", title="", probability=1.0)]
    pair = {
        "title": "Install the pair made together",
        "addresses": ["pair"],
        "commands": [
            "pip install torch==<X> torch-npu==<X.postN>   # torch_npu is released per torch version",
            "pip install vllm==<X.Y.Z> vllm-ascend==<X.Y.Z-rcN>",
            "pip install paddle-custom-npu==<release paired with paddlepaddle>",
            "pip install '<package>==<release>'   # e.g. an sglang release",
        ],
    }

    def commands(*lines: str) -> list[str]:
        return order_fixes([pair], causes, context_of(*lines))[0][0].commands

    everything = pair["commands"]
    assert commands("plain chatter") == everything  # nothing shows which stack ran
    on_mindie = commands('File "/opt/venvs/mindie/lib/python3.11/site-packages/atb_llm/runner.py", line 3')
    assert on_mindie == [everything[0], everything[3]]  # a comment's example is no stack
    on_vllm = commands("(VllmWorker rank=0 pid=1) ERROR vllm_ascend/worker.py")
    assert on_vllm == [everything[0], everything[1], everything[3]]
    # a training framework runs a serving engine inside (its rollout): the engine's line stays
    on_verl = commands('File "/root/verl/verl/trainer/main_ppo.py", line 9, in main')
    assert on_verl == [everything[0], everything[1], everything[3]]


def test_a_timeout_already_as_long_as_the_fix_is_applied():
    context = context_of("export HCCL_CONNECT_TIMEOUT=3600", "HCCL_EXEC_TIMEOUT=600")
    assert context.applied({"HCCL_CONNECT_TIMEOUT": "1800"})
    assert not context.applied({"HCCL_EXEC_TIMEOUT": "3600"})
    assert not context.applied({"HCCL_CONNECT_TIMEOUT": "1800", "HCCL_EXEC_TIMEOUT": "3600"})


def test_a_job_started_by_triage_shows_its_command_line_and_inherited_settings():
    context = JobContext()
    environ = {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,garbage_collection_threshold:0.6", "HOME": "/r"}
    context.observe_job(["torchrun", "--nproc-per-node", "8", "-m", "vllm.entrypoints.openai.api_server"], environ)
    assert context.launcher == "torchrun" and "vllm" in context.workloads
    assert context.env == {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,garbage_collection_threshold:0.6"}


def test_run_leaves_out_a_fix_the_job_inherited(monkeypatch):
    import json
    import sys

    from tests.test_cli_scan import OOM, triage

    monkeypatch.setenv("PYTORCH_NPU_ALLOC_CONF", "expandable_segments:True")
    proc = triage("run", "--json", "--", sys.executable, "-c", f"print({OOM!r}); raise SystemExit(1)")
    summary = json.loads(proc.stdout.decode().splitlines()[-1])
    top = summary["diagnoses"][0]
    assert proc.returncode == 1 and top["id"] == "npu-out-of-memory"
    assert summary["context"]["env"]["PYTORCH_NPU_ALLOC_CONF"] == "expandable_segments:True"
    assert any("already applied" in note and "expandable_segments" in note for note in top["fix_notes"])
    assert not any("expandable_segments:True" in json.dumps(fix.get("env", {})) for fix in top["fixes"])


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("CANN version: 8.1.RC1", "8.1.RC1"),
        ("CANN 版本：8.5.1", "8.5.1"),
        ("ASCEND_TOOLKIT_HOME=/usr/local/Ascend/cann-9.0.0", "9.0.0"),
        ("source /usr/local/Ascend/ascend-toolkit/8.0.RC3/bin/setenv.bash", "8.0.RC3"),
        ("docker run quay.io/ascend/vllm-ascend:v0.11.0rc1-cann8.2.rc1 ...", "8.2.rc1"),
    ],
)
def test_cann_version_as_banners_paths_and_image_tags_write_it(line, version):
    assert context_of(line).versions.get("cann") == version


@pytest.mark.parametrize(
    ("line", "fits"),
    [
        ("SocVersion: Ascend310P3", True),
        ("npu-smi info: 310P3 | OK", True),  # printed without its Ascend prefix
        ("chip ascend310p ready", True),
        ("SocVersion: Ascend910B2", False),
        ("910B3 | OK", False),
    ],
)
def test_a_soc_fits_however_the_log_and_the_entry_write_it(line, fits):
    assert context_of(line).fits({"soc": ["Ascend310P"]}) is fits
    assert context_of(line).fits({"soc": ["310P"]}) is fits


@pytest.mark.parametrize(
    ("line", "env"),
    [
        (
            "+ export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True",
            {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"},
        ),
        ("docker run -e HCCL_CONNECT_TIMEOUT=1200 image", {"HCCL_CONNECT_TIMEOUT": "1200"}),
        # a list of options or devices is read whole (the allocator's second option was lost at the comma)
        (
            "export PYTORCH_NPU_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True",
            {"PYTORCH_NPU_ALLOC_CONF": "max_split_size_mb:128,expandable_segments:True"},
        ),
        ("ASCEND_RT_VISIBLE_DEVICES=0,1 python train.py", {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}),
        (
            "HCCL_CONNECT_TIMEOUT=1200, HCCL_EXEC_TIMEOUT=600",
            {"HCCL_CONNECT_TIMEOUT": "1200", "HCCL_EXEC_TIMEOUT": "600"},
        ),
        # what a message says of the job's own setting, up to its sentence's end or the next field
        ("HCCL_BUFFSIZE=200MB.[FUNC:MoeDistributeDispatchA3TilingFuncImpl]", {"HCCL_BUFFSIZE": "200MB"}),
        # torch_npu's own advice, printed under every asynchronous error: not the job's setting
        (
            "If you want to get the accurate stacktrace, please set the environment variable ASCEND_LAUNCH_BLOCKING=1.",
            {},
        ),
        ("If reserved but unallocated memory is large try setting PYTORCH_NPU_ALLOC_CONF=expandable_segments:True", {}),
    ],
)
def test_env_settings_are_the_jobs_not_what_a_message_asks_for(line, env):
    assert context_of(line).env == env


def test_a_fix_a_message_asks_for_is_not_taken_as_already_applied(scan_text):
    # Read as the job's setting, the OOM message's own advice dropped the fix that applies it.
    result = scan_text(
        "RuntimeError: NPU out of memory. Tried to allocate 3.52 GiB (NPU 0; 60.97 GiB total capacity; 40.10 GiB "
        "already allocated; 50.00 GiB reserved in total by PyTorch) If reserved but unallocated memory is large try "
        "setting PYTORCH_NPU_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"
    )
    top = result.diagnoses[0]
    assert top.id == "npu-out-of-memory" and not top.fix_notes
    assert top.fixes[0].env == {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}


def test_a_version_ends_where_the_words_after_it_begin_without_a_space():
    # Ascend/pytorch#108, as pasted: "torch-npu 2.7.1执行报错日志：" (2.7.1's error log).
    assert context_of("torch-npu 2.7.1执行报错日志：").versions.get("torch_npu") == "2.7.1"


@pytest.mark.parametrize(
    "line", ["CANN error 507013: launch failed", "ggml_cann: CANN error2.25.616", "cannot open 8.0.1"]
)
def test_no_cann_version_from_error_codes_or_other_words(line):
    assert "cann" not in context_of(line).versions


@pytest.mark.parametrize(
    ("version", "spec", "verdict"),
    [
        ("24.1.rc2", ">=23.0.0", True),
        ("22.0.4", ">=23.0.0", False),
        ("8.0.RC3", ">=8.0.1", True),  # only the parts both write are compared: the log says 8.0
        ("2.1.0.post4", ">=2.1,<2.6", True),
        ("2.6.0", ">=2.1,<2.6", False),
        ("v0.11.0rc1", "<0.11", False),
        ("RC3", ">=8.0", None),
    ],
)
def test_version_ranges_compare_the_numbers_both_sides_write(version, spec, verdict):
    assert satisfies(version, spec) is verdict


def test_the_packages_a_range_may_name_are_those_the_log_is_read_for():
    assert set(get_args(VersionedPackage)) == {name for name, _ in VERSION_PATTERNS}


def test_a_fix_for_other_versions_is_left_out_and_said():
    causes = [CauseResult(id="frag", title="", probability=1.0)]
    fixes = [
        {
            "title": "Expandable segments",
            "addresses": ["frag"],
            "env": {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"},
            "applies_to": {"versions": {"driver": ">=23.0.0"}},
        },
        {"title": "max_split_size_mb", "addresses": ["frag"], "applies_to": {"versions": {"driver": ">=1.0"}}},
    ]
    old = context_of("| npu-smi 22.0.4                   Version: 22.0.4                                     |")
    offered, notes = order_fixes(fixes, causes, old)
    assert [fix.title for fix in offered] == ["max_split_size_mb"]
    assert notes == ["not for the versions this job runs (driver 22.0.4): Expandable segments"]
    # A newer driver, or none shown: the fix is offered, first as written.
    for context in (context_of("| npu-smi 24.1.rc2.2               Version: 24.1.rc2.2 |"), JobContext()):
        assert [fix.title for fix in order_fixes(fixes, causes, context)[0]] == [
            "Expandable segments",
            "max_split_size_mb",
        ]
    assert old.fits({"versions": {"driver": "<23"}, "workload": []}) is True


@pytest.mark.parametrize(
    ("line", "runtimes"),
    [
        (
            "[ERROR] DEVICE(246,ffff807c8ac0,python):2023-08-10 [mindspore/ccsrc/runtime/device/kernel_runtime.cc:123]",
            {"mindspore"},
        ),
        ('  File "/root/mindocr/tools/train.py", line 12, in <module>', {"mindspore"}),
        ('  File "/usr/lib/python3.9/site-packages/paddle/base/framework.py", line 4, in f', {"paddle"}),
        ("ggml_cann_init: device 0", {"llama.cpp"}),
        ("(VllmWorker rank=0 pid=1) INFO vllm serve", {"torch"}),
        ('  File "/usr/lib/python3.10/site-packages/torch_npu/npu/utils.py", line 4, in f', {"torch"}),
        # ModelArts names its conda env "MindSpore" whatever runs in it; PaddleDetection calls trainer.train too.
        (
            '  File "/home/ma-user/anaconda3/envs/MindSpore/lib/python3.9/site-packages/torch_npu/x.py", line 1',
            {"torch"},
        ),
        ("    trainer.train(FLAGS.eval)", set()),
        ('  File "/src/kernels/op_kernel/add_custom.cpp", line 9', set()),
    ],
)
def test_the_runtime_a_job_runs_on_is_read_from_its_frameworks(line, runtimes):
    assert context_of(line).runtimes == runtimes


def test_a_torch_fix_is_dropped_only_where_the_log_shows_another_runtime():
    causes = [CauseResult(id="frag", title="", probability=0.9), CauseResult(id="budget", title="", probability=0.1)]
    fixes = [
        {"title": "Expandable segments", "addresses": ["frag"], "applies_to": {"runtime": ["torch"]}},
        {"title": "Cap MindSpore's device memory", "addresses": ["budget"], "applies_to": {"workload": ["mindspore"]}},
        {"title": "Smaller batch", "addresses": ["budget"]},
    ]

    def offered(*lines: str) -> list[str]:
        return [fix.title for fix in order_fixes(fixes, causes, context_of(*lines))[0]]

    mindspore = "[ERROR] ME(1234:281473,MainProcess):2024-01-01 [mindspore/common/api.py:10] Out of Memory!!!"
    assert offered(mindspore) == ["Cap MindSpore's device memory", "Smaller batch"]
    # Most jobs run on PyTorch and few logs say so: where the log is silent a torch fix keeps its
    # place by its cause, and a fix for another runtime comes last.
    assert offered("RuntimeError: out of memory") == [
        "Expandable segments",
        "Smaller batch",
        "Cap MindSpore's device memory",
    ]
    torch = '  File "/usr/lib/python3.10/site-packages/torch_npu/npu/memory.py", line 4, in f'
    assert offered(torch) == ["Expandable segments", "Smaller batch"]


def test_a_fix_for_a_cause_the_log_gives_no_reason_to_suspect_comes_last():
    causes = [
        CauseResult(id="op-bug", title="", probability=0.6),
        CauseResult(id="index", title="", probability=0.37),
        CauseResult(id="aiv", title="", probability=0.03),
    ]
    fixes = [
        {"title": "Use HCCL's host expansion mode", "addresses": ["aiv"]},
        {"title": "Upgrade vLLM-Ascend", "addresses": ["op-bug"], "applies_to": {"workload": ["vllm"]}},
        {"title": "Check index ranges", "addresses": ["index"]},
    ]
    offered = [fix.title for fix in order_fixes(fixes, causes, JobContext())[0]]
    assert offered == ["Check index ranges", "Upgrade vLLM-Ascend", "Use HCCL's host expansion mode"]


@pytest.mark.parametrize(
    ("lines", "stack"),
    [
        (
            ["INFO vllm_ascend/worker.py:12 starting", 'File "/x/torch_npu/npu/utils.py", line 80'],
            {"runtime": ["torch"], "workload": ["vllm"]},
        ),
        (['File "/x/paddle/fluid/framework.py", line 3, in run'], {"runtime": ["paddle"], "workload": ["paddle"]}),
        # A kernel names no stack: it is built and run from any.
        (["error: tilelang kernel failed to compile"], {}),
        (["INFO step 1 loss 2.0"], {}),
    ],
)
def test_the_stack_a_log_shows_reads_back_from_its_table_cell(lines, stack):
    context = context_of(*lines)
    assert context.stack() == stack
    assert parse_stack(stack_text(context.stack())) == stack
    # Another job of the same stack fits it; a job of another runtime does not.
    assert context_of(*lines).fits(stack) is not False
    if stack:
        assert context_of('File "/x/mindspore/train.py", line 3, in run').fits(stack) is False
