"""The query a guess offers for an issue tracker: the message's own words, between this job's values."""

from __future__ import annotations

import pytest

from triage.engine.search_query import search_query


@pytest.mark.parametrize(
    ("message", "query"),
    [
        # A number inside the phrase is this job's: the phrase is the run of words after it (a phrase
        # with the number masked away, `[errno ] read-only file system`, matched no thread).
        ("OSError: [Errno 30] Read-only file system: '/data0/reports/run1.json'", '"Read-only file system"'),
        # Words keep the digits that name them.
        (
            "RuntimeError: duplicate registrations for aten.expm1.default",
            '"RuntimeError duplicate registrations for aten.expm1.default"',
        ),
        (
            "[MoeDistributeDispatchV2] Attr commAlg is invalid, current only support fullmesh_v1 and fullmesh_v2",
            '"MoeDistributeDispatchV2 Attr commAlg is invalid current only support fullmesh_v1 and"',
        ),
        # A launcher's prefix (pid, time, source line) is no part of the message.
        (
            "(EngineCore_DP0 pid=276) ERROR 03-18 08:08:14 [core.py:1100] raise MLIRCompilationError(stage_name, x)",
            '"raise MLIRCompilationError stage_name x"',
        ),
        (
            "RuntimeError: NPU out of memory. Tried to allocate 3.52 GiB (NPU 0; 60.97 GiB total capacity)",
            '"RuntimeError NPU out of memory Tried to allocate"',
        ),
        # Brackets part words; a numbered instance is this job's too.
        (
            "[LaunchKernelFromCache][129253] errno[361001] OpName:[aclnnSigmoid] aclrtLaunchKernelWithHostArgs failed:",
            '"OpName aclnnSigmoid aclrtLaunchKernelWithHostArgs failed"',
        ),
        ("Exception in thread Thread-6: worker died", '"Exception in thread"'),
        # No run of three words: the longest there is.
        ("KeyError: 'model.layers.92.self_attn.q_proj.weight'", '"KeyError"'),
        ("utils.py current_device", '"utils.py current_device"'),
    ],
)
def test_the_phrase_is_a_run_of_the_messages_own_words(message, query):
    assert search_query(message) == f"{query} ascend npu"
