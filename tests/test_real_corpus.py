"""The real corpus (logs_samples/real): blind-split accuracy floors and advice that fits the job.

The floors are what the KB measurably reaches on the test split today, so a change that loses
ground fails here; the targets of the generalisation issue are higher, and the README shows the
current figures. Only the test split is quoted: the train split is what entries are written from.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from triage.engine.context import JobContext
from triage.kb.loader import safe_yaml
from triage.kbtools.cases import load_cases, thread_key
from triage.kbtools.evaluate import evaluate

CORPUS = ROOT / "logs_samples" / "real"
# Session 10 added 46 fresh test threads in three rounds, which read lower (26 of 46 named right before
# any rule was written from them), session 11 another 40 (19 right), session 12 another 30 (21 right),
# session 13 another 33 in three rounds (19 right), session 14 another 11 in two rounds (4 right, 3 with nothing),
# session 16 another 8 (6 right), session 18 another 23 in three rounds (12 right, 1 with nothing; 12 more
# confirmed-fix logs), session 19 another 55 in six rounds (31 right, 3 with nothing; 43 more confirmed-fix
# logs, 2 of them given the fix: mostly framework patches), session 20 another 1 (right): the floors follow the
# grown split. Session 21 moved two test threads to train (an entry cites them): which healthy logs each
# test log is buried between shifted, and 24 of 519 buried logs read silent, 22 of 521 before. Session 23
# added 2 (1 right) and gave failures of no named kind their share of the guess's vote (top-1 64.5% -> 67.2%).
# Session 24 added 22 from merged pull requests' descriptions in three rounds (12 right, 3 silent; 20 more
# confirmed-fix logs, each fixed by the pull request's own change, one given its cause and none its fix:
# 20 of 137 fixes and 33 of 137 causes, 20 and 31 of 117 before; top-1 67.2% -> 66.5% on 543).
# Session 27 added the missing-standard-header cause of extension builds (GCC 13's "did you forget to
# '#include <cstdint>'?", from public threads and three train cases): train leave-thread-out causes 24% ->
# 25%, fixes 18% -> 20%; on the test split one log whose thread named another cause now gets it first
# (33 -> 32 of 137 causes; the case was not read).
# Its trigger words and the evaluation-report guess then took the split to 66.8% / 82.0% / 5.2% (buried
# 66.5% / 81.6% / 3.7%): the floors follow.
# Session 32's cause for errors that name what is missing (`triage.engine.named`): train leave-thread-out
# causes 26% -> 29%, fixes 19% -> 20% of 209; test 33 -> 34 causes and 20 -> 21 fixes of 137. Then the
# offline-model SoC cause (FunASR#2676, a train case, with its example line in the word model): test
# 34 -> 33 causes, 21 -> 22 fixes (no train case moved).
# Paddle's "raises an EnforceNotMet exception" as an error line: one more test log with a diagnosis
# (no diagnosis 5.2% -> 5.0%, top-1 67.2% -> 67.4%); train leave-thread-out unchanged.
# Session 34 read one test log by chance while looking at the CLI's output (cann/pypto PR 5100, whose top
# cause was the thread's): it went to train, unstudied, and the split's causes read 32 of 136. Then one
# mining round of six helpers added 23 cases (16 of them maintainers' troubleshooting pages, train since the
# KB cites those documents), 5 of them test threads: 3 right when first scanned, 4 in the top three.
# The family rule for collectives given a non-contiguous tensor (public threads and the torch_npu
# troubleshooting page) added its words to the catch-all's family in the guess's word model: one test
# guess then lent another cause (33 -> 32 of 139 causes); the case was not read.
TEST_FLOOR = {"top1": 0.66, "top3": 0.84, "no_diagnosis": 0.056, "top_cause_right": 0.22, "fix_in_first_two": 0.154}
# Session 41: named templates for an environment variable a release rejects, an address in use, a path the
# job cannot write and a checkpoint key the model lacks, and a family rule's causes led by the name its
# line gives (chosen leave-thread-out on train: causes 92 -> 99 of 347): test causes 40 of 206 -> 46 of
# 207, fixes 35 of 207; 3 blind cases joined (2 named right when first scanned): 66.6% / 84.5% / 5.4% of 670.
# Session 40: 18 blind failure cases joined (8 named right when first scanned, 13 in the top three, 3 with
# no diagnosis): 66.5% / 85.0% / 5.2% of 686 (66.9% / 85.2% / 5.0% of 676 before the last 10); buried,
# 65.7% / 83.7% / 4.2%. Then 19 test logs that repeat a train log (`triage.kbtools.twins`: an issue and its
# fix's pull request, a page and its mirror) joined train, never having been blind: 66.6% / 84.6% / 5.4% of
# 667, buried 65.7% / 83.1% / 4.4%, causes 40 / fixes 35 of 206.
# Session 37: 4 blind cases joined (3 named right when first scanned; 67.4% / 84.8% of 617).
# Session 37: second opinions beside specific entries (where the nearest lines' vote for its family is
# split) and up to two of them: top-3 83.2% -> 84.7% (buried 82.1% -> 83.7%), top-1 unchanged.
# Session 36: 50 blind cases joined, 30 named right when first scanned (67.1% of 613), one with no
# diagnosis (28); of those with a confirmed fix, 37 of 189 get the thread's cause first. A blind healthy
# log with a false alarm was read to fix it and moved to train (0 of 74).
# Session 35: a blind test case whose thread confirms a cause the KB does not rank first joined (32 of 140).
# Buried in every healthy log, the grown split reads 66.1% / 81.2% / 4.4% on 543 (66.6% / 81.0% / 4.4% on 521;
# which healthy logs each is buried between shifts as cases join, and 4.8% read silent at 539). Since
# session 34 a case keeps its pair as the corpus grows (`evaluate.burial`): 66.4% / 81.4% / 3.7% on 542
# (by position, the pairs of the day read 67.2% / 82.1% / 3.7%, and 65.6% after five cases joined). Session
# 36's 25 new test cases (and 14 new healthy logs to be buried between) take top-1 to 66.0% on 588.
BURIED_FLOOR = {"top1": 0.65, "top3": 0.825, "no_diagnosis": 0.046}
# Fix text that only makes sense on one stack: (pattern, workloads for which it is right).
STACK_WORDS = (
    (r"\bvllm serve\b|--gpu-memory-utilization|--max-model-len", {"vllm", "vllm-ascend"}),
    (r"--mem-fraction-static|python -m sglang", {"sglang"}),
    (r"-DGGML_CANN\b|\bllama-(?:cli|server|bench)\b", {"llama.cpp"}),
    (r"\bpip install -U (?:vllm|vllm-ascend|sglang)\b|docker pull quay\.io/ascend/vllm-ascend", {"serving"}),
    # a serving engine's pinned install: a training framework may run the engine inside (a rollout)
    (r"\bpip install (?:vllm|vllm-ascend|sglang)==", {"serving", "training"}),
    (r"\bpip install (?:paddlepaddle|paddle-custom-npu)==", {"paddle"}),
    (r"\bpip install mindspore==", {"mindspore"}),
    (r"\bpip install -U deepspeed\b", {"deepspeed", "training"}),
    (r"\bmaxPrefillTokens\b|\bnpuMemSize\b|mindie-service", {"mindie"}),
    (r"\blmdeploy (?:serve|chat)\b", {"lmdeploy"}),
    (r"\bllamafactory-cli\b", {"llamafactory"}),
    (r"\bswift (?:sft|pt|rlhf|infer|deploy)\b", {"ms-swift"}),
    (r"\bpip install -U paddlepaddle|\bpaddle\.set_device\(", {"paddle"}),
    (r"\bTrainingArguments\(|\bTrainer\(", {"hf-trainer", "llamafactory", "ms-swift"}),
    # a Triton kernel's code: jobs that compile Triton kernels (kernel work, serving, training)
    (r"\bBLOCK_[A-Z]+\b|\btl\.\w+\(|@triton\.jit", {"triton-ascend", "custom-kernel", "serving", "training"}),
    # a rebuild of the job's own op library, a change to its model code: not a server's, nor llama.cpp's
    (
        r"MMCV_WITH_OPS=1 FORCE_NPU=1 pip install|\bnms\(boxes\.cpu\(\)",
        {"training", "diffusers", "comfyui", "custom-kernel"},
    ),
)


@pytest.fixture(scope="module")
def cases():
    return load_cases(CORPUS)


@pytest.fixture(scope="module")
def report(engine_kb, cases):
    """The test split, and the train split's healthy logs (for false alarms)."""
    return evaluate(engine_kb, [c for c in cases if c.split == "test" or c.healthy])


@pytest.fixture(scope="module")
def whole_report(engine_kb, cases):
    return evaluate(engine_kb, cases)


def test_corpus_is_real_sized_and_split_bythread_key(cases):
    failing = [c for c in cases if not c.healthy]
    assert len(failing) >= 200 and sum(c.healthy for c in cases) >= 25
    assert len({c.repo for c in failing}) >= 35
    assert sum(c.split == "test" for c in failing) >= 60
    assert all(c.split in ("train", "test") for c in cases)
    assert len({c.id for c in cases}) == len(cases)


# Both tests read the same scan of the test split (10-18 s of CPU): one worker makes it for both
# (`--dist loadgroup`), not each worker that draws one of them.
@pytest.mark.xdist_group("test_split_report")
def test_test_split_floors_and_no_false_alarm(report):
    summary = report.summary("test")
    assert summary["top1"] >= TEST_FLOOR["top1"], summary
    assert summary["top3"] >= TEST_FLOOR["top3"], summary
    assert summary["no_diagnosis"] <= TEST_FLOOR["no_diagnosis"], summary
    assert summary["top_cause_right"] >= TEST_FLOOR["top_cause_right"], summary
    assert summary["fix_in_first_two"] >= TEST_FLOOR["fix_in_first_two"], summary
    assert summary["false_alarms"] == 0 and report.summary("train")["false_alarms"] == 0


@pytest.mark.xdist_group("test_split_report")
def test_the_kb_clears_the_keyword_baseline_on_the_same_logs(report):
    summary = report.summary("test")
    assert summary["top1"] >= summary["keyword_top1"] + 0.2, summary
    assert summary["no_diagnosis"] < summary["keyword_no_diagnosis"], summary
    assert summary["false_alarms"] < summary["keyword_false_alarms"], summary


# Each of the 500-odd test logs scanned again between two healthy logs: 14 s of CPU, so it runs with
# the slow tests too (still in .ci/run), where the default run would pass 90 s on 2 cores.
@pytest.mark.slow
def test_test_split_buried_between_healthy_logs(engine_kb, cases):
    test_cases = [c for c in cases if c.split == "test"]
    healthy = [c.file for c in cases if c.healthy]
    summary = evaluate(engine_kb, test_cases, bury_in=healthy).summary()
    assert summary["top1"] >= BURIED_FLOOR["top1"], summary
    assert summary["top3"] >= BURIED_FLOOR["top3"], summary
    assert summary["no_diagnosis"] <= BURIED_FLOOR["no_diagnosis"], summary


# Every case of the corpus, train and test, scanned: 20 s of CPU, so it runs with the slow tests
# (`pytest -m slow`, the second step of .ci/run) and the default run stays under 90 s on 2 cores.
@pytest.mark.slow
def test_no_fix_for_a_stack_the_log_shows_is_not_running(engine_kb, whole_report):
    entries = {entry.id: entry for entry in engine_kb.entries}
    wrong = []
    for outcome in whole_report.outcomes:
        case, result = outcome.case, outcome.result
        context = JobContext(
            **{k: v for k, v in result.context.items() if k in ("launcher", "workloads", "soc", "env", "runtime")}
        )
        shown = context.shows("workload")
        for diagnosis in result.diagnoses:
            declared = {
                fix["title"]: fix
                for entry_id in [diagnosis.id, *diagnosis.resembles]
                if entry_id in entries
                for fix in entries[entry_id].fixes
            }
            for fix in diagnosis.fixes:
                applies_to = (declared.get(fix.title) or {}).get("applies_to") or {}
                if applies_to and context.fits(applies_to) is False:
                    wrong.append(f"{case.id}: {diagnosis.id}: {fix.title} (for {applies_to})")
                text = " ".join([fix.title, fix.description, *fix.commands, fix.code.after if fix.code else ""])
                for pattern, stacks in STACK_WORDS:
                    if shown and re.search(pattern, text) and not shown & stacks:
                        wrong.append(f"{case.id}: {diagnosis.id}: {fix.title} (shows {sorted(shown)})")
    assert not wrong, "\n".join(wrong[:20])


def test_neighbours_file_is_current():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_neighbours.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_a_fix_cites_as_confirmed_only_threads_that_confirm_it():
    """`confirmed_by` is a fix's proof: a corpus thread cited there must be one whose fix is confirmed."""
    rows = safe_yaml((CORPUS / "cases.yaml").read_text(encoding="utf-8"))
    unconfirmed = {thread_key(row["source"]) for row in rows if not row.get("fix_confirmed")}
    wrong = [
        f"{path.name}: {url}"
        for path in sorted((ROOT / "kb").rglob("*.yaml"))
        for fix in (safe_yaml(path.read_text(encoding="utf-8")) or {}).get("fixes") or []
        for url in fix.get("confirmed_by") or []
        if thread_key(url) in unconfirmed
    ]
    assert not wrong, wrong


def test_no_entry_cites_a_test_thread(engine_kb, cases):
    """The test split stays blind: an entry citing a test thread (a reference, or where a fix was
    confirmed) was written from it, and the split's figures would no longer be a blind measure."""
    from triage.kbtools.evaluate import entries_citing

    citing = entries_citing(engine_kb)
    cited = sorted(c.id for c in cases if c.split == "test" and thread_key(c.source or "") in citing)
    assert not cited, cited


def test_no_test_log_repeats_a_train_log(cases):
    """The test split stays blind: a test log that repeats a train log's own lines, error line and all
    (one failure pasted on two pages: an issue and the pull request that fixed it, a doc and its
    mirror), is a failure the train split already holds."""
    from triage.kbtools.twins import LogIndex, telling_lines

    lines = {c.id: telling_lines(c.file) for c in cases}
    index = LogIndex(lines.items())
    train = {c.id for c in cases if c.split == "train"}
    twins = [(c.id, index.twin(c.id, lines[c.id], among=train.__contains__)) for c in cases if c.split == "test"]
    assert not [pair for pair in twins if pair[1] is not None]


def test_leave_thread_out_switches_off_the_entries_that_cite_the_thread(engine_kb, cases):
    from triage.kbtools.evaluate import entries_citing

    citing = entries_citing(engine_kb)
    cited = [c for c in cases if c.split == "train" and not c.healthy and thread_key(c.source or "") in citing][:12]
    ids = {c.id: {engine_kb.entries[i].id for i in citing[thread_key(c.source or "")]} for c in cited}
    named = {o.case.id: {d.id for d in o.result.diagnoses} for o in evaluate(engine_kb, cited).outcomes}
    left_out = {
        o.case.id: {d.id for d in o.result.diagnoses}
        for o in evaluate(engine_kb, cited, leave_thread_out=True).outcomes
    }
    assert sum(bool(named[case] & ids[case]) for case in ids) >= len(ids) // 2  # the entries do name their threads
    assert all(not (left_out[case] & ids[case]) for case in ids)


def test_a_renamed_repositorys_thread_is_the_same_thread():
    assert thread_key("https://github.com/hiyouga/LLaMA-Factory/issues/7986/") == thread_key(
        "https://github.com/hiyouga/LlamaFactory/issues/7986"
    )
    assert thread_key("https://github.com/hiyouga/LlamaFactory/issues/798") != thread_key(
        "https://github.com/hiyouga/LlamaFactory/issues/7986"
    )
