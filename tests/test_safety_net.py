"""The safety net: an error no entry knows still gets a diagnosis, marked as a guess."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from triage.engine.hints import degenerate_text, evaluation_report, looped_output, word_votes
from triage.engine.error_lines import (
    CODE,
    EXCEPTION,
    EXIT,
    LEVEL,
    SIGNAL,
    SYMPTOM,
    TRACEBACK,
    error_kind,
    message_of,
    warned,
)
from triage.engine.nearest import CATCH_ALL_SHARE, WRAPPER, NeighbourIndex
from tests.conftest import context_of
from triage.engine.context import JobContext
from triage.engine import error_lines, guess_advice
from triage.engine.guess_advice import NAMED_REPORTED_PRECISION, REPORTED_PRECISION
from triage.engine.safety_net import (
    MAX_CONFIDENCE,
    MIN_CONFIDENCE,
    SECOND_GUESS_SHARE,
    WARNED_REPEATS,
    diagnose_unclaimed,
    second_opinion,
)
from triage.engine.unclaimed import ErrorLine, UnclaimedErrors
from triage.results import Diagnosis, EvidenceLine


@pytest.mark.parametrize(
    "line, kind, message",
    [
        (
            "(VllmWorkerProcess pid=270962) ERROR 07-03 19:33:28 [multiproc_worker_utils.py:238] RuntimeError: boom",
            EXCEPTION,
            "RuntimeError: boom",
        ),
        ("[rank3]: torch._dynamo.exc.BackendCompilerFailed: backend='npu' raised:", EXCEPTION, None),
        ("ERROR 07-03 19:33:28 [core.py:291] Engine core failed to start", LEVEL, "Engine core failed to start"),
        (
            "[2025-08-28 09:26:00.028+0000] [4833] [281473362444704] [batchscheduler] [ERROR] [standard_model.py:186] : "
            "[Model] Failed to init model weights",
            LEVEL,
            "[Model] Failed to init model weights",
        ),
        ("[2026-08-26 01:05:32 DP0 TP1] Scheduler hit an exception: boom", LEVEL, "Scheduler hit an exception: boom"),
        # Paddle's PIR interpreter names the op and the exception it raised (PaddlePaddle/Paddle#75300, train)
        (
            "Instruction OP id: 0, Ir OP id: 1100, pd_op.conv3d raises an EnforceNotMet exception "
            "common::enforce::EnforceNotMet",
            LEVEL,
            None,
        ),
        (
            "[ERROR] MINDOCR(42937:281473356976176,Process-1:31):2024-06-01-15:07:17.776.636 "
            "[src/parallel/framework/module_base.py:40] ClsPreNode init failed: daemonic processes",
            LEVEL,
            "ClsPreNode init failed: daemonic processes",
        ),
        ("[1,3]<stderr>:Segmentation fault (core dumped)", SIGNAL, None),
        (
            "(SGLangEngine pid=1) [2026-04-22 08:39:15 TP1] Scheduler hit an exception: Traceback (most recent call last):",
            LEVEL,
            None,
        ),
        ("Traceback (most recent call last):", TRACEBACK, None),
        (
            "[ERROR] 2026-01-26-03:28:29 (PID:2805207, Device:1, RankID:-1) ERR00100 PTA call acl api failed.",
            CODE,
            "ERR00100 PTA call acl api failed.",
        ),
        (
            "(RayWorkerWrapper pid=6592, ip=10.0.0.5) ERROR 12-12 05:11:33 [worker_base.py:275] Traceback (most recent"
            " call last): [repeated 23x across cluster]",
            TRACEBACK,
            "Traceback (most recent call last):",
        ),
        ("test_kernel.py::test_split_qkv FAILED", LEVEL, None),
        ("NameError('loop_x0 is not defined')", EXCEPTION, "NameError('loop_x0 is not defined')"),
        ('    raise ValueError("bad shape")', None, None),
        # xllm-ai/xllm#498, as pasted: glog's severity letter glued to the date, spdlog's lowercase level
        (
            "E20251208 11:52:44.736321 69197 npu_word_embedding_impl.cpp:96] node.operation is null",
            LEVEL,
            "node.operation is null",
        ),
        (
            "[2025-12-08 11:52:44.735471] [error] [69197] [operation_util.h:156] rankSize [16] is invalid",
            LEVEL,
            "rankSize [16] is invalid",
        ),
        ("[rank0]:[E1208 11:52:44.736321597 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught a timeout", LEVEL, None),
        ("ACL error, the error code is : 500001.", CODE, None),
        # Paddle-Lite's level prefix; a tqdm bar the error was glued to; a colour code a paste kept without its ESC
        (
            "[F 12/ 1 14:47:20.689 ...le-Lite/lite/kernels/nnadapter/engine.cc:294 Engine] Check failed: no device",
            LEVEL,
            "Check failed: no device",
        ),
        ("  0%|          | 0/50 [00:00<?, ?it/s].EZ9999: Inner Error!", CODE, "EZ9999: Inner Error!"),
        (
            "[0;36m(EngineCore_DP0 pid=224)[0;0m ERROR 03-03 10:59:11 [core.py:938] EngineCore failed to start.",
            LEVEL,
            "EngineCore failed to start.",
        ),
        # Open MPI's signal handler (mindspore-lab/mindyolo#238), logrus, make, a shell.
        ("[notebook-2a7f:3436928] Failing at address: 0xb8", SIGNAL, None),
        ('time="2025-11-28T09:37:41Z" level=fatal msg="no NPU found on this node"', LEVEL, None),
        ("make[2]: *** [CMakeFiles/npu_ops.dir/build.make:76: npu_ops.o] Error 1", EXIT, None),
        ("bash: line 1: npu-smi: command not found", SYMPTOM, None),
        # An exception in parentheses (runpy), onnxruntime's CANN EP, an Android-style logger (nndeploy)
        (
            "/usr/bin/python3: Error while finding module specification for 'x.y' (ModuleNotFoundError: No module named 'x')",
            EXCEPTION,
            "ModuleNotFoundError: No module named 'x')",
        ),
        (
            "CANN failure 507013: (look for ACL_ERROR_xxx in acl. h); NPU=0 ; expr=aclrtSynchronizeStream(s);",
            LEVEL,
            None,
        ),
        ("E/nndeploy_default_str: inferShape [File op_conv.cc][Line 29] input_shape.size() < 2.", LEVEL, None),
        ("CAUTION: The operator 'aten::foo' is not currently supported on the NPU backend", SYMPTOM, None),
        # GGML_ABORT at its source location (gpustack/gpustack#755)
        ("/home/runner/work/llama-box/llama.cpp/ggml/src/ggml-cann/ggml-cann.cpp:63: CANN error", LEVEL, None),
        # pydantic's ValidationError (vLLM's config checks): the detail line says what failed, the header wraps it
        (
            "(APIServer pid=1)   Value error, max_num_batched_tokens (2048) is smaller than max_model_len (32768). "
            "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
            EXCEPTION,
            "ValidationError: max_num_batched_tokens (2048) is smaller than max_model_len (32768).",
        ),
        (
            "  Assertion failed, tp must divide heads [type=assertion_error, input_value=1]",
            EXCEPTION,
            "ValidationError: tp must divide heads",
        ),
        (
            "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
            TRACEBACK,
            None,
        ),
        # an uncaught C++ exception's message, under "terminate called after throwing an instance of ..."
        ("  what():  vector::reserve", EXCEPTION, "vector::reserve"),
        # a Kubernetes event that something failed, as `kubectl describe pod` lists it (HAMi #1941)
        ("  Warning  FilteringFailed   96s (x13 over 98s)  hami-scheduler  1 nodes ModeNotFit(node-1)", LEVEL, None),
        # a server's JSON error response, as curl prints it (MindIE's FAQ, vLLM's OpenAI server)
        ('{"error": "Message len not in (0, 4194304]", "error_type": "Input Validation Error"}', LEVEL, None),
        (
            '{"object":"error","message":"maximum context length is 4096","type":"BadRequestError","code":400}',
            LEVEL,
            None,
        ),
        # the kernel's report of a hardware error (APEI / GHES), as dmesg or the device's kbox prints it
        ("[2454.830701] {6}[Hardware Error]  error_type: 3, multi-bit ECC", LEVEL, None),
        # a server's answer that a request failed, as its access log writes it (MindIE, gpustack #3129)
        (
            "[server] [Response mindie server, method is POST, uri is /v1-openai/chat/completions] [status code: 404]",
            SYMPTOM,
            None,
        ),
        # a setting a library refuses, said without a level or an exception (DrivingSDK's FAQ)
        ('Environment variable [HCCL_IF_IP] is invalid. Reason: it should be "ip[%ifname]".', SYMPTOM, None),
        # where the line came from, as journald, a container runtime and docker compose write it
        ("May  1 10:11:12 node1 python[1234]: RuntimeError: boom", EXCEPTION, "RuntimeError: boom"),
        ("2024-05-01T10:11:12.345678901Z stderr F RuntimeError: boom", EXCEPTION, "RuntimeError: boom"),
        ("vllm-ascend-1  | EH9999: Inner Error!", CODE, "EH9999: Inner Error!"),
        # a quoted reply's mark (three corpus logs were pasted so); pytest's `>` stands before indented source
        ("> > RuntimeError: boom", EXCEPTION, "RuntimeError: boom"),
        ("> EL0014: The operation is unsupported.", CODE, "EL0014: The operation is unsupported."),
        # a table's first cell is no service column: another `|` follows it
        ("| accuracy | 0.31 | FAILED |", LEVEL, "accuracy | 0.31 | FAILED |"),
        # pydantic's detail line as a user retyped it, lower-cased (vllm-ascend #8409)
        (
            "value error, the model type `qwen3_5_moe` is not recognised",
            EXCEPTION,
            "ValidationError: the model type `qwen3_5_moe` is not recognised",
        ),
    ],
)
def test_error_lines_across_launcher_prefixes(line, kind, message):
    assert error_kind(line) == kind
    if message is not None:
        assert message_of(line) == message


@pytest.mark.parametrize(
    "line",
    [
        "(VllmWorkerProcess pid=1) ERROR 07-03 19:33:28 [worker.py:238]     return forward_call(*args, **kwargs)",
        '(VllmWorkerProcess pid=1) ERROR 07-03 19:33:28 [worker.py:238]   File "/x/y.py", line 3, in f',
        "step 10 loss 1.2 errors=0",
        "/usr/lib/python3/x.py:12: UserWarning: an error may follow",
        'raise RuntimeError("x")',
        # A failure's word on a line its logger marked as chatter.
        "(EngineCore_3 pid=302616) INFO 08-13 02:24:45 [platform.py:162] PIECEWISE compilation enabled on NPU."
        " use_inductor not supported - using only ACL Graph mode",
        "[2025-01-01 10:00:00] [DEBUG] retrying after a timed out probe",
        "I20251208 11:52:33.906306 69771 hf_model_loader.cpp:65] shard 2 read timed out, retrying",
        "[2025-12-08 11:52:44.735471] [info] [69197] [server.h:12] retry after timed out request",
        "step 10 failures: 0",
        "total tokens 161002000, overflow steps 0, skipped steps 0, loss scale 65536.0",
        "ggml.c:12: no error",
        "the handler raises no exception for a retried request",
        # A warning about an exception the program caught and went past (vLLM on an NPU).
        "WARNING: Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")",
        "  Normal   Scheduled  10s   default-scheduler  Successfully assigned default/ascend-pod to node-1",
        '{"error": null, "status": "ok"}',
        'INFO:     127.0.0.1:49006 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "[server] [Response mindie server, method is GET, uri is /v1/models] [status code: 200]",
        '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"message":{"content":"an error-free answer"}}]}',
    ],
)
def test_lines_that_are_not_errors(line):
    assert error_kind(line) is None


def test_unknown_library_error_gets_a_guess_with_next_steps(scan_text):
    result = scan_text(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "FrobnicatorError: the quantum frobnicator overflowed its widget budget\n"
    )
    guess = result.diagnoses[0]
    assert guess.guess and guess.id == "unrecognised-error"
    assert guess.confidence <= MAX_CONFIDENCE
    assert guess.evidence[0].line == 3
    steps = [fix for fix in guess.fixes if fix.kind == "diagnostic"]
    assert any("github.com/search" in command for fix in steps for command in fix.commands)
    assert any(
        command.startswith("triage kb new --from test.log --lines 3-3") for fix in steps for command in fix.commands
    )


def test_error_lines_whose_closest_neighbours_all_score_the_floor_still_get_a_guess(scan_text):
    # Found by fuzzing: a GE line cut mid-word scores exactly MIN_SCORE with its neighbours, whose
    # line votes then summed to zero and were divided by it (a traceback from `triage scan`).
    result = scan_text(
        "[ERROR] GE(44031,demo):2023-11-29-09:48:39.193.070 [ge_generator.cc:665]44031 GenerateModel: "
        "ErrorNo: 1343266818(Graph manager add graph faily(fn)\n"
    )
    assert result.diagnoses and result.diagnoses[0].guess


def test_a_guess_is_titled_by_the_exception_and_what_it_says(scan_text):
    result = scan_text(
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, Invalid repository ID or local directory specified: '/models/foo'.\n"
    )
    # pydantic's header only wraps what failed: the line under it is the error raised.
    assert result.diagnoses[0].title == (
        "Unrecognised ValidationError: Invalid repository ID or local directory specified: '/models/foo'."
    )
    # torch_npu's wrapper sentence says where to look and only then which operator: the title names it.
    wrapper = scan_text(
        "RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the "
        "current working operator name is aclnnCamMoeDispatchNormal.\n"
    )
    assert [d.title for d in wrapper.diagnoses if d.guess][0] == (
        "Unrecognised RuntimeError in aclnnCamMoeDispatchNormal (its inner error is reported above it)"
    )


def test_a_bare_error_heading_gives_way_to_the_line_that_says_what_failed(scan_text):
    # ops-nn #1732's paste: the heading first, then the call that failed.
    result = scan_text("Error:\nfrobnicateWorkspaceSize failed! error code: 987654\n")
    guess = next(d for d in result.diagnoses if d.guess)
    assert guess.title == "Unrecognised error: frobnicateWorkspaceSize failed! error code: 987654"
    # Alone, the heading is still the error the log shows.
    assert next(d for d in scan_text("RuntimeError:\n").diagnoses if d.guess).title.startswith("Unrecognised")


@pytest.mark.parametrize(
    "line",
    [
        # ge #471, as pasted (the backtick and the rest of the linker's message lost)
        "/usr/local/Ascend/cann//lib64/libge_runner_v2.so: undefined reference to ge::ExecutionRuntime::"
        "FinalizeExecutionRuntime()\u7b49",
        "The conflict is caused by:",
        'Missing key(s) in state_dict: "model.embed.weight".',
        "allclose(rtol=0.0001, atol=1e-05): False",
    ],
)
def test_a_failure_said_without_an_error_word_still_reaches_the_safety_net(scan_text, line):
    # The native prefilter hands Python only lines with a trigger word: a symptom's words must be ones.
    guesses = [d for d in scan_text(f"step 1 loss 2.0\n{line}\n").diagnoses if d.guess]
    assert guesses and guesses[0].evidence[0].line == 2


def test_a_log_that_ends_on_an_evaluation_report_is_a_numerical_question(scan_text):
    # vllm-ascend #1553, as pasted: lm-eval's table, and mmlu at chance level
    result = scan_text(
        "|                 Tasks                 |Version|Filter|n-shot|Metric|   |Value |   |Stderr|\n"
        "|---------------------------------------|------:|------|-----:|------|---|-----:|---|-----:|\n"
        "|mmlu                                   |      2|none  |      |acc   |\u2191  |0.2584|\u00b1  |0.0037|\n"
    )
    guess = result.diagnoses[0]
    assert guess.guess and guess.category == "nan_loss_scale" and guess.severity == "warning"
    assert guess.title.startswith("An evaluation report, with no error") and guess.confidence <= MAX_CONFIDENCE


@pytest.mark.parametrize(
    ("line", "report"),
    [
        ("npu mean acc 0.54145", True),  # sglang's MMMU benchmark (sglang #18481)
        ("accuracy: 0.812", True),
        ("step 10 mean loss 0.54", False),
        ("mean acc of the last 10 steps rose", False),
    ],
)
def test_an_accuracy_score_is_an_evaluation_report(line, report):
    assert evaluation_report(line) is report


def test_no_error_means_no_diagnosis(scan_text):
    assert scan_text("step 1 loss 2.0\nstep 2 loss 1.9\ndone\n").diagnoses == []


def test_a_log_that_ends_while_capturing_is_a_stall(scan_text):
    result = scan_text(
        "INFO load model\nINFO KV cache allocated\nCapture cuda graph begin. This can take up to several minutes.\n"
    )
    stall = result.diagnoses[0]
    assert stall.guess and stall.severity == "warning"
    assert stall.category == "dynamic_shape_compile"
    assert stall.evidence[0].line == 3


@pytest.mark.parametrize(
    "last",
    [
        "[ModelZoo-compile_time:0:00:00.000121]",  # mindspore-lab/mindaudio's healthy run, as pasted
        "INFO 08-13 02:24:45 Graph capturing finished in 12 secs, took 0.50 GiB",
        "INFO torch.compile takes 3.2 s in total for the initial compilation",
    ],
)
def test_a_log_that_ends_on_work_finished_is_no_stall(scan_text, last):
    assert scan_text(f"INFO load model\nINFO KV cache allocated\n{last}\n").diagnoses == []


@pytest.mark.parametrize(
    "line",
    [
        "Generated text: ' and the English and the English and the English and the English and the English and the English and the English'",
        'run 1 text: \'/"bre"The"**"*}*}*}*}*}*}*}*}*}*}*}*}*}*}\'',
        '{"text":"\\n)),)_)))\\".\\".\\".\\".\\".\\".\\".\\".\\"....","finish_reason":"length"}',
        "输出：的的的的的的的的的的的的的的",
        # vllm-project/vllm-ascend#463, as pasted: wrong logits decoded into a soup of writing systems
        "Prompt: 'Hello, my name is', Generated text: 'vertisementclosed:\".$ adhere sustained ה Various草肉 "
        "acheter逐渐 nextState_language recommending出品 Clause'",
        # vllm-project/vllm-ascend#883, as pasted (shortened): a model stuck on one token
        '{"choices":[{"index":0,"text":"\\n)),)_)))\\".\\".\\".\\".\\"' + "." * 40 + '","finish_reason":"length"}]}',
        "output: " + "!" * 30,
        # vllm-project/vllm-ascend#1743, as pasted (shortened): punctuation soup with a few words
        '{"choices":[{"index":0,"text":",.,. and,.,,,,,,.,0 and,, and,,,)),.,, a,;,,,.,,;;,,,,, and,, to,,,,,,,,,.,,,,,,,,,.,)"}]}',
        # vllm-project/vllm-ascend#9951, as pasted (shortened): a whole sentence said again and again
        '"message":{"role":"assistant","content":"The cat sits on the mat. The cat sits on the mat. The cat sits on the mat. The',
        # vllm-project/vllm-ascend#4283, as pasted bare (shortened): a soup of writing systems needs no key
        "sions(FragmentDead already732 cubes alpha talkVSそう faturTl局 sh Interpretation Cunningham-leancen "
        "DroplisParashela empowered/Sh Broken domaineben粗Smoke-seMain.gener",
        # ggml-org/llama.cpp#25693, under an evaluation harness's own key
        '{"origin_prompt": "what is deep learning?", "prediction": "**Deep Learning高雅 аку primeiro punish Mehr '
        'synchronized gewetoLowerCaseIdeIde{!!详细描述 primeiroIdeannten punishlox÷toLowerCasetoLowerCase гр"}',
    ],
)
def test_output_that_repeats_itself_is_degenerate(line):
    assert degenerate_text(line)


@pytest.mark.parametrize(
    "line",
    [
        "Loading ../../../../../../../../../../lib/libfoo.so",
        "=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=",
        "100%|██████████████████████████████████████████| 50/50 [00:10<00:00,  4.9it/s]",
        "input_ids: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]",
        "token_ids: [9, 92, 9, 92, 9, 92, 9, 92, 9, 92, 9, 92, 9, 92, 9, 92, 9, 92]",
        "Prompt: 'Hello, my name is', Generated text: ' Anna and I live in Paris with my family.'",
        "------------------------------------------------------------",
        "Loading checkpoint shards ........................................ done",
        "Prompt: 'Translate: good morning', Generated text: ' Bonjour! In Japanese: おはよう, in Chinese: 早上好.'",
        "Generated text: ' 北京是中国的首都 (Beijing is the capital of China), 上海 is its largest city.'",
        # Bilingual log lines: two writing systems, however often they switch
        "[INFO] 模型加载完成 model loaded 权重 weights 已就绪 ready 设备 npu:0 显存 HBM 使用 usage 正常 ok",
        # A request's prompt, and a completion of code: punctuation, but not mostly
        '{"text": "What is SGLang?", "sampling_params": {"temperature": 0, "max_new_tokens": 1000}}',
        '"text":"def f(x):\n    return {k: [v] for k, v in x.items()} if x else {}"',
        # A sentence said twice, or three alike sentences that differ: a model may do that, and well
        '"content":"The cat sits on the mat. The cat sits on the mat. The dog sits on the mat. The cat"',
    ],
)
def test_paths_banners_progress_and_numbers_are_not_degenerate(line):
    assert not degenerate_text(line)


def test_a_log_that_ends_on_degenerate_output_is_a_numerical_failure(scan_text):
    result = scan_text(
        "INFO 05-16 engine started\n"
        "Prompt: 'Hello', Generated text: 'of the of the of the of the of the of the of the of the of the'\n"
        "INFO 05-16 request finished\n"
    )
    [guess] = result.diagnoses
    assert guess.guess and guess.category == "nan_loss_scale" and guess.severity == "error"
    assert guess.evidence[0].line == 2 and guess.title.startswith("Degenerate output")


def test_a_log_that_ends_printing_one_line_over_and_over_is_degenerate_output(scan_text):
    looped = "INFO 05-16 engine started\n" + "上海世博局\n" * 4 + "上海世博城\n" + "上海世博局\n"
    [guess] = scan_text(looped).diagnoses
    assert guess.category == "nan_loss_scale" and guess.title.startswith("Degenerate output")
    assert guess.evidence[0].line == 7


@pytest.mark.parametrize(
    "tail",
    [
        ["Waiting for the next batch..."] * 6,  # a job waiting
        ["Still compiling the graph"] * 6,  # a stall
        ["step 100 done"] * 6,  # a counter
        ["INFO: heartbeat"] * 6,
        ["Done", "Loading model", "Done", "Serving", "Done", "Ready"],  # no line repeats enough
        ["----------"] * 6,
    ],
)
def test_a_log_that_ends_on_repeated_log_lines_is_not_looped_output(tail):
    assert looped_output(tail) is None


def test_a_traceback_cut_before_its_error_line_is_still_an_error(scan_text):
    frames = (
        '(EngineCore pid=136)   File "/vllm/vllm/compilation/decorators.py", line 480, in __call__\n'
        "(EngineCore pid=136)     return self.aot_compiled_fn(self, *args, **kwargs)\n"
        '(EngineCore pid=136)   File "/torch/_dynamo/aot_compile.py", line 124, in __call__\n'
        "(EngineCore pid=136)     return self.fn(*args, **kwargs)\n"
    )
    for log in (frames, "INFO starting\n" + frames + "INFO step 1 loss 2.0\nINFO step 2 loss 1.9\n"):
        guess = scan_text(log).diagnoses[0]
        assert guess.guess and guess.severity == "error"
        assert guess.title.startswith("A traceback cut off before its error line")
        assert "aot_compile.py" in guess.evidence[0].text
        assert guess.evidence[0].line == log.splitlines().index(frames.splitlines()[2]) + 1
    # Where the log ends on the last frame's statement, the guess reads (and names) what the job was doing.
    assert scan_text(frames).diagnoses[0].title == (
        "A traceback cut off before its error line, in aot_compile.py __call__: return self.fn(*args, **kwargs)"
    )
    assert scan_text(frames.rsplit("\n", 2)[0] + "\n").diagnoses[0].title.endswith("in aot_compile.py __call__")


def test_pytest_frames_are_frames_too(scan_text):
    log = "vllm/entrypoints/llm.py:243: in __init__\n    engine_args = EngineArgs(\nvllm/plugins/__init__.py:81: in load\n"
    guess = scan_text(log).diagnoses[0]
    assert guess.title.startswith("A traceback cut off before its error line")
    assert guess.evidence[0].line == 3


def test_pybind11_frames_under_a_cpp_exception_are_frames_too(scan_text):
    # gpustack/gpustack#2194 (train split): a MindIE start-up paste that holds only pybind11's `At:` frames.
    log = (
        "At:\n"
        "  /usr/local/Ascend/atb-models/atb_llm/models/base/model_utils.py(14): <module>\n"
        "  <frozen importlib._bootstrap>(241): _call_with_frames_removed\n"
        "  /usr/local/Ascend/atb-models/atb_llm/runner/tokenizer_wrapper.py(3): <module>\n"
    )
    guess = scan_text(log).diagnoses[0]
    assert guess.title.startswith("A traceback cut off before its error line")
    assert guess.evidence[0].line == 4
    # Its search query names the frame's file, not the masked-away path.
    assert '"tokenizer_wrapper.py' in guess.fixes[-2].description


def test_a_bare_traceback_header_gives_way_to_its_last_frame(scan_text, engine_kb):
    log = 'Traceback (most recent call last):\n  File "/opt/job/train.py", line 12, in <module>\n    main()\n'
    log += '  File "/opt/job/loader.py", line 40, in load_weights\n'
    guess = scan_text(log).diagnoses[0]
    assert guess.title.startswith("A traceback cut off before its error line")
    assert "loader.py" in guess.evidence[0].text
    # Advice is borrowed only from an entry of the family the guess names.
    categories = {entry.id: entry.category for entry in engine_kb.entries}
    for cause in guess.causes:
        if "(as in " in cause.title:
            assert categories[cause.title.rsplit("(as in ", 1)[1][:-1]] == guess.category


@pytest.mark.parametrize(
    ("text", "family"),
    [
        # Ascend/op-plugin PR 5309 (train): a kernel that "only supports" one path is a limit of the op
        (
            "RuntimeError: GQA FP8 Fullquant(Qurey/Key Per-Token-Head, Value PerHead) only supports path 0.",
            "unsupported_op",
        ),
        ("RuntimeError: HCCL function error: HcclAllreduce, error code is 9", "hccl_timeout"),
    ],
)
def test_family_words_vote_for_their_family(text, family):
    votes = word_votes(text)
    assert max(votes, key=votes.__getitem__) == family


def test_a_specific_entry_leaves_no_room_for_a_guess(scan_text):
    result = scan_text(
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; "
        "20.13 GiB already allocated; 20.13 GiB current active; 1.01 GiB free; 50.61 GiB reserved in total by PyTorch)\n"
        "FrobnicatorError: something else entirely\n"
    )
    assert not any(d.guess for d in result.diagnoses)


def test_a_specific_entry_whose_lines_read_like_another_familys_gets_a_second_opinion_below_it(scan_text):
    # Segfaults are printed by crashing compilers as often as by crashing kernels: the nearest known
    # failures of this line vote for its own family below half, and the others are offered after it.
    result = scan_text("Fatal Python error: Segmentation fault\n")
    first, *rest = result.diagnoses
    assert first.id == "host-segmentation-fault" and not first.guess
    opinions = [d for d in rest if d.guess]
    assert opinions and all(d.category != "segfault" and d.confidence == MIN_CONFIDENCE for d in opinions)
    assert result.diagnoses.index(opinions[0]) > max(result.diagnoses.index(d) for d in rest if not d.guess)


def test_neighbours_vote_and_wrapper_lines_abstain():
    index = NeighbourIndex(
        (
            ("importerror: lib<n>.so: cannot open shared object file", "env_version", "case:a"),
            ("runtimeerror: npu out of memory. tried to allocate <n> gib", "npu_oom", "case:b"),
            ("err<n> pta call acl api failed", WRAPPER, "entry:err00100"),
        )
    )
    guess = index.guess([("ImportError: libfoo.so: cannot open shared object file", 1.0)])
    assert guess is not None and guess.category == "env_version"
    assert index.guess([("ERR00100 PTA call acl api failed", 1.0)]) is None
    # Words alone (no reported failures, so no family's share of them either).
    worded = NeighbourIndex(()).guess([("something odd", 1.0)], {"hccl_timeout": 0.2, "npu_oom": 0.15}, catch_all=True)
    assert worded is not None and worded.category == "hccl_timeout" and worded.score == 0.0
    # Failures of no named kind get a share of every vote that lines cast (see CATCH_ALL_SHARE).
    total = 0.35 * (1 + CATCH_ALL_SHARE)
    assert worded.others == (
        ("npu_oom", pytest.approx(0.15 / total, abs=0.001)),
        ("other", pytest.approx(0.35 * CATCH_ALL_SHARE / total, abs=0.001)),
    )


def test_a_guess_lists_the_families_that_came_close_after_it(engine_kb):
    index = NeighbourIndex(())
    votes = {"hccl_timeout": 0.5, "npu_oom": 0.3, "segfault": 0.15, "nan_loss_scale": 0.01}
    guess = index.guess([("something odd", 1.0)], votes)
    assert guess is not None and [c for c, _ in guess.others] == ["npu_oom", "segfault"]

    message = "RuntimeError: out of memory while the kernel compiled"
    unclaimed = UnclaimedErrors()
    unclaimed.note("k", EXCEPTION, lambda: ErrorLine(1, EXCEPTION, EvidenceLine("job.log", 3, message, None), message))
    diagnoses = diagnose_unclaimed(engine_kb, unclaimed, JobContext())
    # Three families, the winner first; each alternative a guess at the floor of confidence.
    assert [d.id for d in diagnoses] == ["unrecognised-error"] + ["unrecognised-error-alternative"] * 2
    assert len({d.category for d in diagnoses}) == 3
    assert all(d.confidence <= diagnoses[0].confidence <= MAX_CONFIDENCE for d in diagnoses)
    shares = [d.extracted["vote_share"] for d in diagnoses]
    assert shares == sorted(shares, reverse=True) and shares[-1] >= SECOND_GUESS_SHARE * shares[0]


def test_a_family_rules_lines_that_resemble_another_family_get_a_second_opinion(engine_kb):
    kb = dataclasses.replace(
        engine_kb,
        neighbours=(
            ("runtimeerror: the frobnicator stream handle became invalid on device <n>", "segfault", "case:a"),
            ("runtimeerror: the frobnicator stream handle became invalid on rank <n>", "segfault", "case:b"),
        ),
    )
    line = EvidenceLine("job.log", 7, "RuntimeError: the frobnicator stream handle became invalid on device 3")
    family = Diagnosis(
        id="family-x", category="other", title="X", severity="error", confidence=0.85, score=2.0, evidence=[line]
    )
    [alternative] = second_opinion(kb, family, {"other"})
    assert alternative.category == "segfault" and alternative.guess and alternative.confidence == MIN_CONFIDENCE
    assert alternative.evidence == [line] and "family-x" in alternative.summary
    # The kind is named as a reader says it, not as the category's identifier.
    assert alternative.title == "Or a segfault / device-exception crash: X"
    assert "known segfault / device-exception crashes (" in alternative.summary
    # The rule's own family, or one already shown, is no second opinion.
    assert second_opinion(kb, dataclasses.replace(family, category="segfault"), {"segfault"}) == []
    assert second_opinion(kb, family, {"other", "segfault"}) == []


def test_a_guess_lends_what_the_closest_reported_failures_thread_found(engine_kb):
    thread = "https://github.com/example/project/issues/7"
    kb = dataclasses.replace(
        engine_kb,
        neighbours=(
            ("runtimeerror: the frobnicator refused buffer <n> on device <n>", "npu_oom", "case:frob-7"),
            ("runtimeerror: the frobnicator refused buffer <n> on rank <n>", "npu_oom", "case:frob-8"),
        ),
        cases=(
            ("case:frob-7", thread, "The frobnicator pool was too small for the batch.", "Set FROB_POOL=2G.", ""),
            ("case:frob-8", "https://github.com/example/project/issues/8", "Same pool, unconfirmed.", "", ""),
        ),
    )
    message = "RuntimeError: the frobnicator refused buffer 12 on device 3"
    unclaimed = UnclaimedErrors()
    unclaimed.note("k", EXCEPTION, lambda: ErrorLine(1, EXCEPTION, EvidenceLine("job.log", 3, message, None), message))
    guess = diagnose_unclaimed(kb, unclaimed, JobContext())[0]
    assert guess.guess and guess.category == "npu_oom"
    assert guess.causes[0].title.endswith("The frobnicator pool was too small for the batch.")
    assert thread in guess.causes[0].how_to_tell and guess.causes[1].id == "unknown"
    # Alike error lines often fail for different reasons: the lent cause claims less than the likeness,
    # and far less when the lines share only an exception's common words, not a name.
    similar = float(guess.causes[0].how_to_tell.split("%")[0].rsplit(" ", 1)[1])
    assert "name the same" in guess.causes[0].how_to_tell and "frobnicator" in guess.causes[0].how_to_tell
    assert guess.causes[0].probability == round(similar / 100 * NAMED_REPORTED_PRECISION, 3) < similar / 100
    [fix] = [f for f in guess.fixes if f.kind == "fix"]
    assert fix.description == "Set FROB_POOL=2G." and fix.confirmed_by == [thread]
    # Without the cases' table (another KB set), the guess knows no cause.
    bare = diagnose_unclaimed(dataclasses.replace(kb, cases=()), unclaimed, JobContext())[0]
    assert [c.id for c in bare.causes] == ["unknown"] and not [f for f in bare.fixes if f.kind == "fix"]


def test_a_guess_lends_nothing_from_a_reported_failure_of_another_stack(engine_kb):
    kb = dataclasses.replace(
        engine_kb,
        neighbours=(("runtimeerror: the frobnicator refused buffer <n> on device <n>", "npu_oom", "case:frob-7"),),
        cases=(
            (
                "case:frob-7",
                "https://github.com/example/project/issues/7",
                "vLLM's frobnicator pool was too small for the batch.",
                "Start vllm serve with a larger --frob-pool.",
                "runtime=torch workload=vllm",
            ),
        ),
    )
    message = "RuntimeError: the frobnicator refused buffer 12 on device 3"
    unclaimed = UnclaimedErrors()
    unclaimed.note("k", EXCEPTION, lambda: ErrorLine(1, EXCEPTION, EvidenceLine("job.log", 3, message, None), message))

    def lent_to(*lines: str) -> bool:
        guess = diagnose_unclaimed(kb, unclaimed, context_of(*lines))[0]
        return guess.causes[0].id == "as-reported-frob-7"

    # A job that shows nothing of its stack, or the thread's own, is lent the thread's cause; a Paddle
    # job, or a job on torch that serves with SGLang, is not.
    assert lent_to() and lent_to("INFO vllm_ascend/worker.py:12 starting")
    assert not lent_to('File "/usr/lib/python3.10/site-packages/paddle/fluid/framework.py", line 3, in run')
    assert not lent_to('File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 9, in run')


def test_only_names_that_few_known_failures_print_tell_two_alike_errors_apart():
    # Twelve reported failures share an exception's template; each names its own attribute.
    names = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
    index = NeighbourIndex(
        tuple((f"attributeerror: 'model' object has no attribute '{name}'", "other", f"case:{name}") for name in names)
    )
    named = index.rare_words_shared("case:delta", "AttributeError: 'Config' object has no attribute 'delta'")
    assert named == {"delta"}
    # The template's words, and the exception's class however rare, say nothing of which failure it is.
    assert index.rare_words_shared("case:delta", "AttributeError: 'model' object has no attribute 'size'") == set()
    assert REPORTED_PRECISION < NAMED_REPORTED_PRECISION


def test_how_often_a_family_fails_breaks_ties_the_lines_leave_open():
    index = NeighbourIndex(
        (
            ("importerror: libfoo.so: cannot open shared object file", "env_version", "case:a"),
            ("importerror: libbar.so: cannot open shared object file", "env_version", "case:b"),
            ("import failed: libbaz.so", "env_version", "case:c#frames"),
            ("runtimeerror: npu out of memory. tried to allocate <n> gib", "npu_oom", "case:d"),
            ("a healthy run's warning line", "healthy", "case:e"),
            ("err<n> pta call acl api failed", WRAPPER, "entry:err00100"),
        )
    )
    # Nothing resembles the line: the families' shares of the reported failures (3 : 1) decide.
    guess = index.guess([("FrobnicatorError: quux", 1.0)])
    assert guess is not None and guess.category == "env_version" and guess.score == 0.0
    assert guess.share == 0.75 and guess.others == (("npu_oom", 0.25),)
    # A stall's guess (no error lines) is the stall's family alone.
    stalled = index.guess([], {"dynamic_shape_compile": 1.0})
    assert stalled is not None and stalled.category == "dynamic_shape_compile" and stalled.others == ()


def test_an_index_without_some_labels_guesses_as_one_built_without_them(engine_kb):
    rows = engine_kb.neighbours
    cases = sorted({label.removesuffix("#frames") for _, _, label in rows if label.startswith("case:")})
    assert len(cases) > 20
    # A corpus case with frames, a KB entry's examples: what the evaluation drops for a case.
    labels = frozenset([cases[7], cases[-3], next(label for _, _, label in rows if label.startswith("entry:"))])
    derived = engine_kb.without_neighbours(labels).neighbour_index
    built = NeighbourIndex(tuple(n for n in rows if n[2].removesuffix("#frames") not in labels), engine_kb.cases)
    assert derived._word_model == built._word_model
    assert list(derived._word_model[0]) == list(built._word_model[0])  # the vote sums in this order
    for message in ("ImportError: libascend_hal.so: cannot open shared object file", "HCCL init timed out"):
        assert derived.guess([(message, 1.0)]) == built.guess([(message, 1.0)])
    assert engine_kb.without_neighbours(frozenset(["case:no-such-case"])) is engine_kb


def test_a_line_that_failures_of_three_families_print_casts_no_vote():
    ambiguous = "workerproc hit an exception."
    index = NeighbourIndex(
        (
            (ambiguous, "segfault", "case:a"),
            (ambiguous, "npu_oom", "case:b"),
            (ambiguous, "dynamic_shape_compile", "case:c"),
            ("runtimeerror: npu out of memory. tried to allocate <n> gib", "npu_oom", "case:d"),
        )
    )
    # Read as a wrapper's line: neither its neighbours nor its words vote, and nothing else points anywhere.
    assert index.guess([("WorkerProc hit an exception.", 1.0)]) is None
    two = NeighbourIndex(((ambiguous, "segfault", "case:a"), (ambiguous, "npu_oom", "case:b")))
    guess = two.guess([("WorkerProc hit an exception.", 1.0)])
    assert guess is not None and guess.score == 100.0


def test_a_log_of_glog_error_lines_gets_a_guess(scan_text):
    # xllm-ai/xllm, as pasted: no error word, only glog's E severity letter glued to the date.
    line = "E20251216 12:38:26.977864 1162857 npu_qwen3_moe_decoder_layer_impl.cpp:832] node.operation is null\n"
    [guess, *_] = scan_text(line * 3).diagnoses
    assert guess.guess and guess.title == "Unrecognised error: node.operation is null"


def test_a_guess_with_nothing_closer_to_lend_borrows_its_familys_rule(engine_kb, monkeypatch):
    monkeypatch.setattr(guess_advice, "RESEMBLES_AT", 101.0)  # no entry is close enough to lend its advice
    kb = dataclasses.replace(
        engine_kb,
        neighbours=(
            ("runtimeerror: the frobnicator refused buffer <n> on device <n>", "npu_oom", "case:frob-7"),
            (
                "the frobnicator kv cache blocks do not fit the memory budget",
                "npu_oom",
                "entry:family-serving-memory-budget",
            ),
            (
                "device memory exhausted in the frobnicator buffer pool",
                "npu_oom",
                "entry:family-device-memory-exhausted",
            ),
        ),
        cases=(),
    )
    message = "RuntimeError: the frobnicator refused buffer 12 on device 3"
    unclaimed = UnclaimedErrors()
    unclaimed.note("k", EXCEPTION, lambda: ErrorLine(1, EXCEPTION, EvidenceLine("job.log", 3, message, None), message))
    guess = diagnose_unclaimed(kb, unclaimed, JobContext())[0]
    assert guess.category == "npu_oom"
    # No entry close enough to lend its advice, no thread, no package: the family rule whose
    # examples read most alike lends its causes (marked as borrowed) and fixes.
    assert guess.causes[0].title.endswith("(as in family-device-memory-exhausted)")
    # Lent causes are worth what they proved to be worth: "not known" takes the rest, listed last.
    assert [c.id for c in guess.causes].index("unknown") == len(guess.causes) - 1
    assert sum(c.probability for c in guess.causes[:-1]) == pytest.approx(guess_advice.BORROWED_PRECISION, abs=0.01)
    assert sum(c.probability for c in guess.causes) == pytest.approx(1.0, abs=0.01)
    # The summary says whose advice it is and how little the rule's examples may resemble the error.
    assert "causes and fixes are those of family-device-memory-exhausted" in guess.summary
    assert "% similar): a place to start, not a match." in guess.summary
    assert [f for f in guess.fixes if f.kind == "fix"]
    # A fix made for one framework (MindSpore's memory cap, llama.cpp's offload) is lent only to a job
    # the log shows is of it: this one says nothing of its stack.
    assert not [f.title for f in guess.fixes if f.title.startswith(("MindSpore -", "llama.cpp -"))]
    on_mindspore = diagnose_unclaimed(kb, unclaimed, JobContext(workloads=["mindspore"]))[0]
    assert any(f.title.startswith("MindSpore -") for f in on_mindspore.fixes)
    # A job whose stack one rule has fixes made for (lmdeploy's cache budget) borrows that rule's fixes
    # (after the update of lmdeploy itself, the package running), though another's examples read a
    # little more alike.
    on_lmdeploy = diagnose_unclaimed(kb, unclaimed, JobContext(workloads=["lmdeploy"]))[0]
    assert any("cache-max-entry-count" in " ".join([f.title, *f.commands]) for f in on_lmdeploy.fixes[:2])


@pytest.mark.parametrize(
    "line",
    [
        # PaddlePaddle/Paddle-Lite#10432 and volcano-sh/volcano#4773, as pasted
        "[W  1/ 8 18:48:16.252 ...le-Lite/lite/kernels/nnadapter/engine.cc:245 Execute] Warning: Failed to run the execution(2)!",
        "W1201 01:55:32.883264 40728 device_info.go:97] Failed to get node devices. nodeName n1, error annos not found",
    ],
)
def test_a_failure_warned_about_again_and_again_is_the_failure(scan_text, line):
    [guess, *_] = scan_text(f"step 1\n{line}\n" * WARNED_REPEATS).diagnoses
    assert guess.guess and guess.evidence_count == WARNED_REPEATS
    # Once or twice it is a failure the program got past; never beside an error line.
    assert scan_text(f"step 1\n{line}\n" * (WARNED_REPEATS - 1)).diagnoses == []
    [lead, *_] = scan_text(f"{line}\n" * 5 + "RuntimeError: the frobnicator broke\n").diagnoses
    assert lead.evidence[0].text == "RuntimeError: the frobnicator broke"


@pytest.mark.parametrize(
    "line",
    [
        "UserWarning: Failed to load image Python extension: libc10_cuda.so: cannot open shared object file",
        "[WARNING] HCCL connection failed, retrying in 5 s",
        "WARNING 07-25 07:14:48 [metrics.py:20] error rate 0.00, failed requests 0",
    ],
)
def test_warnings_of_failures_a_run_gets_past_are_no_failure(line):
    assert not warned(line)


def test_a_reported_failure_without_a_confirmed_fix_leaves_the_fixes_to_the_family_rule(engine_kb):
    kb = dataclasses.replace(
        engine_kb,
        neighbours=(
            ("runtimeerror: the frobnicator refused buffer <n> on device <n>", "npu_oom", "case:frob-7"),
            (
                "device memory exhausted in the frobnicator buffer pool",
                "npu_oom",
                "entry:family-device-memory-exhausted",
            ),
        ),
        cases=(("case:frob-7", "https://github.com/example/project/issues/7", "The pool was too small.", "", ""),),
    )
    message = "RuntimeError: the frobnicator refused buffer 12 on device 3"
    unclaimed = UnclaimedErrors()
    unclaimed.note("k", EXCEPTION, lambda: ErrorLine(1, EXCEPTION, EvidenceLine("job.log", 3, message, None), message))
    guess = diagnose_unclaimed(kb, unclaimed, JobContext())[0]
    # The thread said why, not what fixed it: its cause leads, the family rule's fixes follow.
    assert guess.causes[0].id == "as-reported-frob-7"
    family = next(e for e in kb.entries if e.id == "family-device-memory-exhausted")
    offered = [f.title for f in guess.fixes if f.kind == "fix"]
    assert offered and set(offered) <= {fix["title"] for fix in family.fixes}


def test_kinds_judged_on_lowered_text_read_every_line_as_before():
    # Case-insensitive groups run on lower-cased text (half the time): the same verdict on every
    # sample and corpus line, uppercase literals (SIGSEGV) and escapes (\S, \W) included.
    lines = [
        line
        for path in sorted((Path(__file__).parent.parent / "logs_samples").rglob("*.log"))
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    ]
    lines += ["Fatal: SIGSEGV received", "exitcode  : -11 (pid: 7)", "loss: NaN", "errors = 0", "Killed"]
    for source in (error_lines._SIGNAL, error_lines._EXIT, error_lines._SYMPTOM, error_lines._NOT_AN_ERROR):
        caseless, lowered = re.compile(source), re.compile(error_lines._lowered(source))
        assert [bool(caseless.search(line)) for line in lines] == [bool(lowered.search(line.lower())) for line in lines]


def test_an_exception_is_an_error_unless_a_warning_says_it_was_caught():
    assert error_kind("ERROR: Failed to load plugin with ImportError('x')") == EXCEPTION
    assert error_kind("WARNING: RuntimeError: the device is gone") == EXCEPTION


@pytest.mark.parametrize(
    ("last", "rule"),
    [
        (
            "INFO 11-28 02:18:01 [model_runner.py:2100] Capturing CUDA graphs (decode, FULL):  45%|####  | 30/67",
            "family-graph-capture-failed",
        ),
        (
            "[rank3]: INFO distributed.py:100 Initializing HCCL process group, world size 16, waiting for all ranks",
            "family-dist-rendezvous-failure",
        ),
        (
            "Prompt: 'The capital of France is', Generated text: ' and the English and the English and the English "
            "and the English and the English and the English and the'",
            "family-degenerate-output",
        ),
        ("INFO 11-28 02:18:01 [backends.py:500] Compiling a graph for dynamic shape takes 28.41 s", None),
    ],
)
def test_a_log_without_an_error_lends_the_advice_of_the_rule_for_how_it_failed(scan_text, last, rule):
    # The rule whose examples merely read most alike was another kind of failure (a Triton kernel's
    # block sizes for a capture that hung, KV-transfer ports for a rendezvous, Inf/NaN settings for garbled text).
    guess = [d for d in scan_text("[rank0]: INFO starting the job\n" + last + "\n").diagnoses if d.guess]
    if rule is None:
        assert guess == []  # it says how long the compile took: the job went past it
        return
    assert rule in guess[0].summary
    assert guess[0].causes[0].title.endswith(f"(as in {rule})")


def test_a_rule_overridden_by_a_kb_of_ones_own_lends_that_kbs_advice(tmp_path):
    # Both copies of an overridden entry are kept, the shipped one first and switched off: the one in
    # force lends (the switched-off one was taken for the rule, which then seemed missing).
    from triage.engine import Scanner
    from triage.engine.setup import load_reported_kb

    shipped = Path(__file__).parent.parent / "kb" / "nan_loss_scale" / "family-degenerate-output.yaml"
    own = tmp_path / "kb" / "nan_loss_scale" / shipped.name
    own.parent.mkdir(parents=True)
    own.write_text(
        shipped.read_text().replace(
            "    title: NaN / Inf in a low-precision", "    title: OWN NaN / Inf in a low-precision", 1
        )
    )
    kb = load_reported_kb([tmp_path / "kb"], include_shipped=True, warn=print, building=lambda: None)
    scanner = Scanner(kb)
    scanner.feed_text(
        "Prompt: 'Hi', Generated text: ' and the English and the English and the English and the English"
        " and the English and the English and the'\n",
        "test.log",
    )
    guess = next(d for d in scanner.result().diagnoses if d.guess)
    assert "the KB's rule for this kind of failure" in guess.summary  # not a family rule that reads alike
    assert guess.causes[0].title.startswith("OWN NaN / Inf")


def test_a_last_line_that_says_the_work_is_off_is_no_stall():
    from triage.engine.hints import stall_category

    assert stall_category("INFO [platform.py:297] Compilation disabled, using eager mode by default") is None
    assert stall_category("INFO [platform.py:162] PIECEWISE compilation enabled on NPU.") is None
    assert stall_category("Capturing CUDA graphs (decode, FULL)") == "dynamic_shape_compile"


@pytest.mark.parametrize(
    "line",
    [
        "pyarrow.lib.ArrowInvalid: Index not in dictionary bounds",
        "subprocess.TimeoutExpired: Command '['npu-smi', 'info']' timed out after 30 seconds",
        "[rank3]: __main__.TooFewObj: 2 objects, need 3",
    ],
)
def test_a_module_qualified_exception_of_any_name_is_an_error_line(line):
    assert error_kind(line) == "exception"


@pytest.mark.parametrize(
    "line", ["    foo.Bar: an indented code line", "INFO transformers.Trainer: starting", "x = torch.Size: 3"]
)
def test_qualified_names_elsewhere_are_no_exception(line):
    assert error_kind(line) != "exception"


def test_a_builtin_exception_retyped_without_its_space_is_an_error_line():
    # A paste that lost the space after the colon (ModelZoo's ChatGLM2 README); a C++ function's
    # `GetError:` and a counter `ValueError:3` stay what they were.
    line = "RuntimeError:Error!, The last dimension of input tensor shoule be within the range of [32,2048]"
    assert error_kind(line) == EXCEPTION
    assert message_of("[rank0]: " + line).startswith("RuntimeError:Error!")
    assert error_kind("[stream.cc:1041]163618 GetError:Stream Synchronize failed, stream_id=17") != EXCEPTION
    assert error_kind("errors by kind ValueError:3 KeyError:0") is None
    # A wrapper that quotes the exception in brackets (IndexSDK's op generator).
    quoted = "Failed to import Python module [AttributeError: `np.float_` was removed in the NumPy 2.0 release.]"
    assert error_kind(quoted) == EXCEPTION and message_of(quoted).startswith("AttributeError: `np.float_`")


def test_an_exception_whose_message_opens_with_a_bracket_is_no_host_prefix():
    # `host: [rank0] ...` is a launcher's prefix; `OSError: [Errno 30] ...` is the exception itself.
    assert error_kind("OSError: [Errno 30] Read-only file system: '/data/reports'") == EXCEPTION
    assert message_of("node1: [rank0] RuntimeError: x") == "RuntimeError: x"


@pytest.mark.parametrize(
    ("source", "command"),
    [
        ("logs/rank 3.log", "triage kb new --from 'logs/rank 3.log' --lines 2-2"),
        # A stream cannot be read again: `--from <stdin>` was a shell redirection, not a file.
        ("<stdin>", "triage kb new --lines 2-2 < saved.log   # the stdin log, saved to a file"),
    ],
)
def test_the_capture_command_can_be_pasted_into_a_shell(scan_text, source, command):
    result = scan_text("step 1\nFrobnicatorError: the quantum frobnicator overflowed its widget budget\n", source)
    steps = [c for d in result.diagnoses if d.guess for fix in d.fixes for c in fix.commands]
    assert command in steps
