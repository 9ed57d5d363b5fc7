"""Evidence that cannot be flooded, codes that need an error context, work per line shape, and causes
decided by the failure's own lines."""

from __future__ import annotations

import random

import pytest

from triage.engine.confirm import declares_case
from triage.engine.evidence import CAUSE_WINDOW, MAX_EVIDENCE_LINES

EI0006 = (
    "[rank{r}]: EI0006: [PID: {pid}] 2026-11-28-02:17:44.320.123 Getting socket times out. "
    "Reason: Remote Rank did not send the data in time."
)
WARNINGS = (
    "[W compiler_depend.ts:{n}] Warning: Device do not support double dtype now, dtype cast repalce with float.",
    "[W compiler_depend.ts:{n}] Warning: The oprator of npu_rms_norm is not registered for autograd, fall back to CPU.",
)


def noisy_log(lines: int, seed: int = 5) -> tuple[str, int]:
    """A training log where a quarter of the lines are torch_npu warnings, with a few EI0006 lines;
    returns the text and the number of EI0006 lines."""
    rng = random.Random(seed)
    out, ei0006 = [], 0
    for step in range(lines):
        draw = rng.random()
        if draw < 0.25:
            out.append(rng.choice(WARNINGS).format(n=rng.randrange(900)))
        elif draw < 0.252:
            out.append(EI0006.format(r=rng.randrange(8), pid=rng.randrange(10**6)))
            ei0006 += 1
        else:
            out.append(
                f"[rank{rng.randrange(8)}]: step {step} | loss {rng.random():.4f} | tokens/s={rng.randrange(10**6)}"
            )
    return "\n".join(out) + "\n", ei0006


def by_id(result, entry_id: str):
    return next(d for d in result.diagnoses if d.id == entry_id)


def test_ei0006_counts_its_own_lines_and_shows_them_not_the_warnings(scan_text):
    text, expected = noisy_log(20_000)
    assert expected > 10
    diagnosis = by_id(scan_text(text), "hccl-ei0006-socket-timeout")
    assert diagnosis.evidence_count == expected
    assert diagnosis.evidence and all("EI0006" in line.text for line in diagnosis.evidence)


def test_repeats_of_a_line_are_matched_once_and_counted(scan_text):
    lines = [EI0006.format(r=n % 8, pid=1000 + n) for n in range(5000)]
    result = scan_text("\n".join(lines) + "\n")
    diagnosis = by_id(result, "hccl-ei0006-socket-timeout")
    assert diagnosis.evidence_count == 5000
    assert result.stats.candidate_lines <= 2  # one shape: decoded and matched once
    # The first and the last line are shown, with their own line numbers and ranks.
    assert (diagnosis.evidence[0].line, diagnosis.evidence[-1].line) == (1, 5000)
    assert (diagnosis.evidence[0].rank, diagnosis.evidence[-1].rank) == (0, 4999 % 8)


def test_listing_slots_go_to_the_entrys_own_distinct_lines_first(scan_text):
    own = [
        f"[rank0]: EI0006: Getting socket times out. Reason: peer {word} did not send the data in time"
        for word in "abcdefghij"
    ]
    support = [f"[rank0]: Loading checkpoint shards {word}" for word in "abcdefghij"]
    lines = [line for pair in zip(support, own) for line in pair]
    diagnosis = by_id(scan_text("\n".join(lines) + "\n"), "hccl-ei0006-socket-timeout")
    shown = [line.supports for line in diagnosis.evidence]
    assert len(shown) == MAX_EVIDENCE_LINES
    assert shown.count(None) >= MAX_EVIDENCE_LINES - 2
    assert any(cause == "slow-rank" for cause in shown)  # the cause still shows where it came from


def test_a_shape_is_listed_once_however_often_its_digit_groups_take_turns(scan_text):
    # Two groups of one shape (a PID that may be a code, a PID that cannot): each return of one
    # after the other is matched again, and used to be listed again as a new shape.
    lines = [
        f"[rank0]: EZ1001: [PID: {pid}] self not implemented for DT_DOUBLE, should be in dtype support list [DT_FLOAT,]."
        for pid in ("507015", "123456") * 6
    ]
    diagnosis = by_id(scan_text("\n".join(lines) + "\n"), "aclnn-dtype-double-not-implemented")
    assert diagnosis.evidence_count == 12
    assert [line.line for line in diagnosis.evidence] == [1, 12]  # the first, and the last


def test_cause_lines_count_only_near_the_entrys_own_lines(scan_text):
    far = ["[rank0]: Running tokenizer on dataset"] + [f"step {n}" for n in range(CAUSE_WINDOW + 10)]
    lines = far + [EI0006.format(r=0, pid=1)]
    diagnosis = by_id(scan_text("\n".join(lines) + "\n"), "hccl-ei0006-socket-timeout")
    assert not any(line.supports for line in diagnosis.evidence)
    near = ["[rank0]: Running tokenizer on dataset", "step 1", EI0006.format(r=0, pid=1)]
    diagnosis = by_id(scan_text("\n".join(near) + "\n"), "hccl-ei0006-socket-timeout")
    assert [line.supports for line in diagnosis.evidence] == ["slow-rank", None]


def test_cause_lines_of_another_rank_do_not_count(scan_text):
    lines = ["[rank3]: Running tokenizer on dataset", EI0006.format(r=0, pid=1)]
    diagnosis = by_id(scan_text("\n".join(lines) + "\n"), "hccl-ei0006-socket-timeout")
    assert [line.supports for line in diagnosis.evidence] == [None]


def test_a_cause_pattern_counts_as_whole_words_in_its_declared_case(scan_text):
    assert declares_case("[Cc]ompil(?:e|ing)") and not declares_case("[0-9]+|compile")
    warning = WARNINGS[0].format(n=51)
    for line, counts in ((warning, False), ("[rank0]: COMPILING graph", False), ("[rank0]: Compiling graph 3", True)):
        diagnosis = by_id(scan_text(f"{line}\n{EI0006.format(r=0, pid=1)}\n"), "hccl-ei0006-socket-timeout")
        assert any(e.supports == "slow-rank" for e in diagnosis.evidence) is counts, line


@pytest.mark.parametrize("code", ["507015", "507035", "507018", "507899", "507033", "561000"])
def test_a_bare_code_in_a_metric_is_not_an_error(scan_text, code):
    rng = random.Random(int(code))
    lines = [
        f"[rank{n % 8}]: step {n} | loss {rng.random():.4f} | tokens/s={code if n == 7 else rng.randrange(10**6)}"
        for n in range(50)
    ]
    lines += [f"iteration {code}/1000000 | consumed samples: {code} | elapsed time per iteration (ms): {code}.4"]
    lines += [f"Processed prompts: 100%|##########| {code}/{code} [00:30<00:00, 5.1it/s] eval samples {code}"]
    result = scan_text("\n".join(lines) + "\n")
    assert not [d.id for d in result.diagnoses if d.confidence >= 0.5]


def test_a_bare_code_in_an_error_context_still_counts(scan_text):
    for line in (
        "RuntimeError: ACL stream synchronize failed, error code:507015",
        "[ERROR] RUNTIME(1234,python):2026-11-28 [stream.cc:1052] synchronize stream failed, runtime result = 507035",
    ):
        assert scan_text(line + "\n").diagnoses[0].confidence >= 0.5, line


def test_healthy_log_with_random_metric_numbers_yields_no_confident_diagnosis(scan_text):
    rng = random.Random(11)
    lines = [
        f"[2026-11-28 02:{n // 60 % 60:02d}:{n % 60:02d}] [rank{n % 8}]: INFO trainer.py:2241 step {n} | "
        f"loss {rng.random() * 3:.4f} | grad_norm {rng.random():.3f} | tokens/s={rng.randrange(10**6)} | "
        f"mem {rng.randrange(10**9)} | samples {rng.choice([507015, 507035, 507018, 561000, 207018, 161002])}"
        for n in range(3000)
    ]
    result = scan_text("\n".join(lines) + "\n")
    assert not [d.id for d in result.diagnoses if d.confidence >= 0.5]


@pytest.mark.parametrize(
    "code, cause",
    [
        ("4", "config-or-version-mismatch"),
        ("7", "device-or-port-busy"),
        ("9", "peer-failed-or-stuck"),
        ("15", "runtime-device-id"),
    ],
)
def test_an_hccl_return_code_decides_the_cause_whatever_the_prior(scan_text, code, cause):
    line = (
        "[rank1]: RuntimeError: HcclAllReduce:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:112"
        f" HCCL function error: HcclAllReduce(inputs), error code is {code}\n"
    )
    family = by_id(scan_text(line), "family-hccl-comm-failure")
    assert family.causes[0].id == cause
    assert family.causes[0].probability > 0.5


AICORE_FAULT = (
    "RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:506 NPU function error: "
    "AclrtSynchronizeDeviceWithTimeout, error code is 507015\n"
    "[Error]: The aicore execution is abnormal.\n"
    "EZ9999: [PID: 6228] 2026-05-10-16:29:39.280.676 The error from device(chipId:1, dieId:0), serial number is 137, "
    "there is an exception of fftsplus aivector error, core id is 37, error code = 0\n"
    "       The extend info: errcode:(0, 0x800, 0) errorStr: {error_str} fixp_error0 info: 0x60000de, tslot:7\n"
)


@pytest.mark.parametrize(
    "error_str, where, cause",
    [
        ("The UB address accessed by the VEC instruction is not aligned.", "", "illegal-config"),
        ("The VEC instruction parameter is invalid.", "", "illegal-config"),
        (
            "When the D-cache reads and writes data to the UB, the response value returned by the bus is a non-zero value.",
            "",
            "custom-kernel",
        ),
        ("The MPU address access is invalid.", "", "index-out-of-range"),
        # No telling errorStr: the job being a kernel compiler's board test names the cause.
        (
            "timeout.",
            "[ERROR] aclrtSynchronizeStream(stream) failed (/home/ci/ptoas-board-monitor/runs/main.cpp:116)\n",
            "custom-kernel",
        ),  # fmt: skip
    ],
)
def test_a_kernel_exceptions_error_string_and_job_decide_its_cause(scan_text, error_str, where, cause):
    result = scan_text(where + AICORE_FAULT.format(error_str=error_str))
    [fault] = [d for d in result.diagnoses if d.id == "aicore-exception-507015"]
    assert fault.causes[0].id == cause, _odds(fault)


@pytest.mark.parametrize(
    "lines, cause",
    [
        (
            [
                "      -- The CXX compiler identification is unknown",
                "      CMake Error at CMakeLists.txt:14 (project):",
                "        No CMAKE_CXX_COMPILER could be found.",
                "      -- Configuring incomplete, errors occurred!",
            ],
            "toolchain-missing",
        ),
        (
            [
                "/home/u/nndeploy/demo/ascend_cl/demo.cc:33: undefined reference to `aclInit'",
                "/usr/bin/ld: /home/u/nndeploy/demo/ascend_cl/demo.cc:37: undefined reference to `aclrtSetDevice'",
                "collect2: error: ld returned 1 exit status",
            ],
            "libraries-not-linked",
        ),
        (["/usr/bin/ld: cannot find -lnpu_hccl", "collect2: error: ld returned 1 exit status"], "libraries-not-linked"),
    ],
)
def test_a_builds_own_error_lines_decide_its_cause(scan_text, lines, cause):
    build = by_id(scan_text("\n".join(lines) + "\n"), "family-extension-build-failed")
    assert build.causes[0].id == cause, _odds(build)


@pytest.mark.parametrize(
    "rejected",
    [
        "error: 'hfusion.cumsum' op operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float",
        "bishengir-compile: for the --target option: Cannot find option named 'Ascend310P3'!",
        "[ConvertLinalgRToBinary] encounters error: LLVM ERROR: unsupported datatype for arith::ExtFOp to hfusion",
    ],
)
def test_a_kernel_the_compiler_cannot_take_is_no_toolchain_mismatch(scan_text, rejected):
    log = f"triton.compiler.errors.MLIRCompilationError:\n[ConvertLinalgRToBinary] encounters error:\n{rejected}\n"
    compile_failed = by_id(scan_text(log), "family-kernel-compile-failed")
    assert compile_failed.causes[0].id == "compiler-unsupported", _odds(compile_failed)
    assert "tl.int32" in compile_failed.fixes[0].code.after
    # What the user meets is an op the chip's compiler does not support, not a compile bug to work around.
    assert compile_failed.category == "unsupported_op"


def test_a_compile_failure_of_another_cause_keeps_the_entrys_category(scan_text):
    log = "triton.compiler.errors.MLIRCompilationError:\nub overflow, requires 1572864 bits while 1572864 bits available\n"
    compile_failed = by_id(scan_text(log), "family-kernel-compile-failed")
    assert compile_failed.causes[0].id == "resource-limit-at-compile", _odds(compile_failed)
    assert compile_failed.category == "dynamic_shape_compile"


@pytest.mark.parametrize(
    "module, cause",
    [
        ("triton.language.extra.ascend", "version-skew"),  # the package is there, the module its caller wants is not
        ("atb_llm.models.qwen2_moe.flash_causal_qwen2_moe_v2", "version-skew"),
        ("vllm", "not-installed"),
    ],
)
def test_a_missing_submodule_is_a_version_skew_and_a_missing_package_not_installed(scan_text, module, cause):
    log = f"Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nModuleNotFoundError: No module named '{module}'\n"
    missing = by_id(scan_text(log), "family-npu-python-module-missing")
    assert missing.causes[0].id == cause, _odds(missing)


def test_a_vllm_ascend_servers_kernel_fault_is_first_advised_by_its_own_release(scan_text):
    log = (
        "(EngineCore_DP0 pid=54) INFO 11-10 12:30:57 [platform.py:48] vllm_ascend 0.11.0rc1 plugin loaded\n"
        "(EngineCore_DP0 pid=54) RuntimeError: ACL stream synchronize failed, error code:507035\n"
        "(EngineCore_DP0 pid=54) [ERROR] 2025-11-10-12:30:57 (PID:54, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n"
        "(EngineCore_DP0 pid=54) [Error]: The vector core execution is abnormal.\n"
    )
    fault = by_id(scan_text(log), "vector-core-exception-507035")
    assert fault.causes[0].id == "op-bug"
    assert fault.fixes[0].title.startswith("vLLM-Ascend - move to a newer vllm-ascend release")


SET_PRECISION = (
    "RuntimeError: SetPrecisionMode:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:155 NPU function error: "
    "at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001\n"
)


CAPTURE_REFUSED = (
    "[ERROR] 2026-03-25-06:14:02 (PID:16884, Device:1, RankID:-1) ERR00100 PTA call acl api failed\n"
    "EE9999: Inner Error!\n"
    "EE9999[PID: 16884] 2026-03-24-09:58:00.084.676 (EE9999):  rtMemcpy execution failed, "
    "reason=the current capture mode does not support this operation[FUNC:FuncErrorReason]\n"
)


@pytest.mark.parametrize(
    "log, entry, cause",
    [
        # An op compiler that cannot start with nothing reported missing: the installation does not pair up.
        (SET_PRECISION, "cann-python-deps-missing", "compiler-env-unpaired"),
        (
            "ModuleNotFoundError: No module named 'decorator'\n" + SET_PRECISION,
            "cann-python-deps-missing",
            "pip-deps-missing",
        ),  # fmt: skip
        ("ModuleNotFoundError: No module named 'tbe'\n" + SET_PRECISION, "cann-python-deps-missing", "cann-missing"),
        # A copy the capture mode refuses is an operation not allowed in capture, not tight memory.
        (CAPTURE_REFUSED, "aclgraph-capture-failed", "op-not-allowed-in-capture"),
    ],
)
def test_what_the_failures_own_lines_say_decides_its_cause(scan_text, log, entry, cause):
    diagnosis = by_id(scan_text(log), entry)
    assert diagnosis.causes[0].id == cause, _odds(diagnosis)


def _odds(diagnosis) -> list[tuple[str, float]]:
    return [(c.id, c.probability) for c in diagnosis.causes]


COMPILER_SEGFAULT = (
    "Fatal Python error: Segmentation fault\n"
    "Current thread 0x0000ffff8c1f7020 (most recent call first):\n"
    '  File "/usr/lib/python3.10/site-packages/triton/backends/ascend/compiler.py", line 124 in ttir_to_linalg\n'
    '  File "/usr/lib/python3.10/site-packages/triton/compiler/compiler.py", line 285 in compile\n'
    '  File "/usr/lib/python3.10/site-packages/triton/runtime/jit.py", line 623 in run\n'
)
RUNNING_SEGFAULT = (
    "Fatal Python error: Segmentation fault\n"
    "Current thread 0x0000ffff8c1f7020 (most recent call first):\n"
    '  File "/usr/lib/python3.10/site-packages/torch/nn/modules/conv.py", line 456 in _conv_forward\n'
)


def test_a_crash_inside_a_kernel_compiler_is_a_compile_failure(scan_text):
    # The stack is the compiler's own: the kernel never ran, it did not build.
    top = scan_text(COMPILER_SEGFAULT).diagnoses[0]
    assert (top.category, top.causes[0].id) == ("dynamic_shape_compile", "kernel-compiler-crash"), _odds(top)
    running = scan_text(RUNNING_SEGFAULT).diagnoses[0]
    assert running.category == "segfault" and running.causes[0].id != "kernel-compiler-crash", _odds(running)


def test_an_uncaught_cpp_exception_shows_its_what_line(scan_text):
    # The abort is how the job ended; the what() line under it is the error a reader looks up.
    log = (
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  CANN graph check failed in function compileCannGraph\n"
        "Aborted (core dumped)\n"
    )
    wrapper = by_id(scan_text(log), "cpp-uncaught-exception")
    assert [(e.line, e.supports) for e in wrapper.evidence] == [(1, None), (2, "exception-in-what")]


def test_a_kernel_project_whose_sources_do_not_compile_is_a_compile_failure(scan_text):
    own_source = (
        "/src/pto-isa/include/pto/common/event.hpp:232:34: error: use of undeclared identifier 'PIPE_FIX'\n"
        "gmake[2]: *** [CMakeFiles/kernel.dir/build.make:76: CMakeFiles/kernel.dir/kernel.cpp.o] Error 1\n"
    )
    top = scan_text(own_source).diagnoses[0]
    assert (top.category, top.causes[0].id) == ("dynamic_shape_compile", "kernel-source-error"), _odds(top)
    # A missing Ascend header is the environment's: CANN was not on the include path.
    missing = "/src/csrc/torch_binding.cpp:20:10: fatal error: acl/acl.h: No such file or directory\n"
    env = scan_text(missing).diagnoses[0]
    assert (env.category, env.causes[0].id) == ("env_version", "cann-not-sourced-for-build"), _odds(env)


def test_a_name_that_leads_the_causes_leaves_the_category_to_the_rules_own_likeliest_cause(scan_text):
    # The line's name leads the causes (`rank._named_first`); what the user meets is still decided by
    # the rule's own likeliest cause: an op the chip's compiler rejects.
    log = (
        "triton.compiler.errors.CompilationError: TypeError: load() got an unexpected keyword argument 'care_padding'\n"
        "error: 'hfusion.cumsum' op operand #0 must be ranked tensor of bfloat16 type or 16-bit float\n"
    )
    compile_failed = by_id(scan_text(log), "family-kernel-compile-failed")
    assert compile_failed.causes[0].id == "named-mismatch" and "care_padding" in compile_failed.causes[0].title
    assert compile_failed.causes[1].id == "compiler-unsupported", _odds(compile_failed)
    assert compile_failed.category == "unsupported_op"
