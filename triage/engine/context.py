"""What was running when the job failed: launcher, workload, versions, SoC and the env vars it set.

Advice depends on it: an inference server's OOM is fixed with a serving flag, a trainer's with a
trainer argument, and a fix whose env var the log shows already set is no fix. Everything here is
read from the log's own lines (and, for a job triage starts itself, its command line and the
settings it inherits); nothing is guessed from outside.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from triage.engine.literal_gate import GatedPattern, gate_text
from triage.kb.versions import satisfies

# (name, pattern): the first that matches a line names it. Order matters where one name contains
# another (vllm-ascend before vllm).
WORKLOAD_PATTERNS: tuple[tuple[str, str], ...] = (
    ("vllm-ascend", r"vllm[_-]ascend"),
    # vLLM's logger stamps `LEVEL MM-DD HH:MM:SS [file.py:line]`; only its ERROR lines are read.
    (
        "vllm",
        r"\bvllm\b|VllmWorker|\bEngineCore(?:_DP\d+)?\b|vllm\.entrypoints"
        r"|\bERROR \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w. -]+\.py:\d+\]",
    ),
    # Only lines that come once a run (a failure, a traceback's path) name the job: a pattern that
    # every line of a log carries (a worker's prefix) would make every line a candidate.
    ("sglang", r"\bsglang\b|sgl[_-]kernel|\bScheduler hit an exception\b"),
    ("mindie", r"\bmindie\b|\batb[_-]llm\b"),
    ("lmdeploy", r"\blmdeploy\b|\bdlinfer\b"),
    ("llamafactory", r"llama[_-]?factory"),
    (
        "ms-swift",
        r"ms[_-]swift|/swift/(?:llm|trainers|megatron|cli|plugin|utils)/|\bswift (?:sft|pt|rlhf|infer|deploy|export)\b",
    ),
    ("verl", r"\bverl\b"),
    ("mindspeed", r"\bmindspeed"),
    ("megatron", r"\bmegatron\b"),
    ("deepspeed", r"\bdeepspeed\b"),
    ("hf-trainer", r"transformers/trainer\.py|\b(?-i:Trainer)\.train\b|trainer\.train\(\)|\bTrainingArguments\b"),
    ("llama.cpp", r"llama\.cpp|\bggml\b|ggml[_-]cann|llama-(?:cli|server|bench)"),
    ("comfyui", r"comfyui|\bcomfy[/.]"),
    ("diffusers", r"\bdiffusers\b"),
    ("paddle", r"\bpaddle(?:paddle|nlp|ocr|x|[_-]?lite|[_-]?custom[_-]?device)?\b|\bfastdeploy\b|\bnnadapter\b"),
    # The package in lower case: ModelArts images name their conda env "MindSpore" whatever runs in it.
    ("mindspore", r"\b(?-i:mindspore)\b|\bmind(?:formers|ocr|yolo|nlp|one|rlhf)\b|\bmsadapter\b"),
    # Triton on an NPU is triton-ascend: its compiler stages name themselves.
    (
        "triton-ascend",
        r"triton[_-]ascend|triton/backends/ascend|bishengir|\bBiShengH?IR\b|ConvertLinalgRToBinary|MLIRCompilationError",
    ),
    (
        "custom-kernel",
        r"\bascendc\b|ascend[ _]c\b|kernel_operator\.h|\btilelang\b|\bop_host\b|\bop_kernel\b|__aicore__"
        r"|\bptoas\b|\bpto[-_]isa\b|\bpypto\b|\bcatlass\b|\baclrtlaunch_\w+|\bfla[_-]npu\b",
    ),
)
LAUNCHER_PATTERNS: tuple[tuple[str, str], ...] = (
    ("torchrun", r"\btorchrun\b|torch\.distributed\.(?:run|launch|elastic)"),
    ("deepspeed", r"deepspeed\.launcher|\bdeepspeed --|\[launch\.py:\d+:main\]"),
    ("accelerate", r"\baccelerate launch\b|accelerate/commands"),
    ("mpirun", r"\bmpirun\b|\[\d+,\d+\]<std(?:out|err)>"),
    ("ray", r"\bray::|RayWorker|\bray\.(?:init|get|remote)\b|ray/_private"),
    ("msrun", r"\bmsrun\b"),
)
_VERSION = r"v?([0-9]+\.[0-9]+(?:\.[0-9A-Za-z_]+)*(?:[.+-]?(?:post|rc|dev)[0-9A-Za-z_]*)?)"
"""ASCII only: a word class reads on into the words of a message written without a space after the
version (`torch-npu 2.7.1执行报错日志`: Python's word characters are Unicode's)."""
VERSION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("torch_npu", rf"torch[_-]npu(?:\s*(?:==|version\s*[:=]?|:)\s*|\s+){_VERSION}"),
    ("torch", rf"(?<![\w-])(?:torch|pytorch)(?:\s*(?:==|version\s*[:=]?|:)\s*|\s+){_VERSION}"),
    # "CANN version: 8.1.RC1", "CANN 版本：8.5.1", an install path (/usr/local/Ascend/cann-8.5.0, ascend-toolkit/8.0.RC3)
    # or an image tag (vllm-ascend:v0.11.0rc1-cann8.2.rc1).
    ("cann", rf"\bCANN(?:[ _-]?(?:toolkit|version|版本))?\s*[:=：]?\s*[-_]?{_VERSION}|ascend-toolkit/{_VERSION}"),
    ("driver", rf"driver\s*version\s*[:=]?\s*{_VERSION}|npu-smi\s+{_VERSION}"),
    ("vllm_ascend", rf"vllm[_-]ascend(?:\s*(?:==|version\s*[:=]?|:)\s*|\s+){_VERSION}"),
    ("vllm", rf"(?<![\w-])vllm(?:\s*(?:==|version\s*[:=]?|:)\s*|\s+){_VERSION}"),
    ("python", rf"\bpython\s*(?:version\s*[:=]?\s*)?(3\.\d+(?:\.\d+)?)"),
)
SOC_PATTERN = (
    r"\bSocVersion\s*[:=]\s*(\w+)|\b(Ascend\s?(?:910|310|950)[A-Za-z0-9_]*)|\b(910B[1-4]?|910C|910_93\d\d|310P\d?)\b"
)
ENV_NAMES = (
    r"PYTORCH_NPU_ALLOC_CONF|HCCL_[A-Z_]+|ASCEND_[A-Z_]+|ACL_[A-Z_]+|TASK_QUEUE_ENABLE"
    r"|VLLM_[A-Z_]+|CPU_AFFINITY_CONF|INF_NAN_MODE_ENABLE|NPU_[A-Z_]+|COMBINED_ENABLE|MULTI_STREAM_MEMORY_REUSE"
)
"""The env vars whose settings the advice reads (a fix the job already has is no fix)."""
_VALUE_PART = r"[^\s,;\[\]`'\"]+"
ENV_PATTERN = (
    rf"(?:export\s+|\benv\s+)?\b({ENV_NAMES})\s*=\s*"
    rf"(\"[^\"]*\"|'[^']*'|{_VALUE_PART}(?:,(?:[\w.]+:{_VALUE_PART}|\d+)(?=[\s,;]|$))*)"
)
"""A setting and its value: a list of options (`expandable_segments:True,max_split_size_mb:128`) or of devices
(`0,1`) whole, not a comma and what follows in a sentence (`X=1, Y=2`)."""
CONTEXT_TRIGGERS: tuple[str, ...] = (
    *(pattern for _, pattern in WORKLOAD_PATTERNS),
    *(pattern for _, pattern in LAUNCHER_PATTERNS),
    r"torch[_-]npu|\bCANN(?:\b|\d)|ascend-toolkit|driver\s*version|npu-smi\s+v?\d|SocVersion|Ascend\s?(?:910|310|950)|\b910B|\b310P",
    r"(?:PYTORCH_NPU_ALLOC_CONF|HCCL_[A-Z_]+|ASCEND_[A-Z_]+|TASK_QUEUE_ENABLE|VLLM_[A-Z_]+)\s*=",
    r'File "[^"]+", line \d+, in ',  # traceback frames: where the job was, and whose code it ran
    r"^\s*[\w/.-]+\.py:\d+: in \w",  # pytest's frames
    r"^\s*[\w/.-]+\.py\(\d+\): [\w<>]+\s*$",  # pybind11's frames under a C++ exception's `At:`
)
"""What the prefilter looks for on lines that no error word flags (traceback paths, banners)."""

SERVING = frozenset({"vllm", "vllm-ascend", "sglang", "mindie", "lmdeploy", "llama.cpp"})
TRAINING = frozenset({"hf-trainer", "llamafactory", "ms-swift", "deepspeed", "megatron", "mindspeed", "verl"})
GROUPS = {"serving": SERVING, "training": TRAINING}
IMPLIES = {"vllm-ascend": "vllm", "llamafactory": "hf-trainer", "ms-swift": "hf-trainer", "mindspeed": "megatron"}
NOT_ON_TORCH = frozenset({"llama.cpp", "paddle", "mindspore"})
"""Workloads that run on their own runtime, not PyTorch: a log that shows torch_npu or torch's own
files and names no workload is still not one of these, so their fixes do not fit it."""
NO_RUNTIME = frozenset({"custom-kernel", "triton-ascend"})
"""Workloads that say nothing of the framework around them (a kernel is built and run from any)."""
TORCH_PATTERN = r"torch[_-]npu|[/\\]torch[/\\]"
MAX_LINES = 4096
"""Context is decided by the first lines that show it; after this many the rest only cost time."""

# Each searched only on a line that holds one of its words (see `literal_gate`): a line that shows
# context is read by some thirty case-insensitive patterns, 250 us when all are searched.
_WORKLOADS_GATED = tuple((name, GatedPattern(p, re.IGNORECASE)) for name, p in WORKLOAD_PATTERNS)
_LAUNCHERS_GATED = tuple((name, GatedPattern(p, re.IGNORECASE)) for name, p in LAUNCHER_PATTERNS)
_VERSIONS_GATED = tuple((name, GatedPattern(p, re.IGNORECASE)) for name, p in VERSION_PATTERNS)
_SOC = GatedPattern(SOC_PATTERN, re.IGNORECASE)
_ENV = GatedPattern(ENV_PATTERN)
_ENV_NAME = re.compile(ENV_NAMES)
SUGGESTION_REACH = 80
_SUGGESTED = re.compile(
    r"\b(?:set(?:ting)?|try|please|should|recommend\w*|consider|suggest\w*|e\.g\.|such as|for example|"
    r"you (?:can|may|must|need to))\b[^.;!?]*$",
    re.IGNORECASE,
)
"""A setting a message asks for (`please set the environment variable ASCEND_LAUNCH_BLOCKING=1`, `try
setting PYTORCH_NPU_ALLOC_CONF=expandable_segments:True`): the words before it in its sentence, within
SUGGESTION_REACH characters. Not the job's setting: read as one, the fix that sets it was dropped as
already applied."""
_TORCH = GatedPattern(TORCH_PATTERN, re.IGNORECASE)
_TORCH_NPU = GatedPattern(r"torch[_-]npu", re.IGNORECASE)
_ANY = GatedPattern("|".join(f"(?:{p})" for p in CONTEXT_TRIGGERS), re.IGNORECASE)


@dataclass
class JobContext:
    launcher: str | None = None
    workloads: list[str] = field(default_factory=list)
    """Every framework the log shows, in order of first sighting."""
    versions: dict[str, str] = field(default_factory=dict)
    soc: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    """Env vars the log shows set (first value seen)."""
    runtime: str | None = None
    """"torch" when the log shows torch_npu or a frame in torch's own files."""
    torch_npu: bool = False
    """The log shows torch_npu: vLLM runs on it only through the vLLM-Ascend plugin."""
    lines_seen: int = 0
    _shapes_seen: set[bytes] = field(default_factory=set, repr=False, compare=False)
    """The shape keys of the lines read that showed context (see `observe`)."""

    @property
    def shown_workloads(self) -> list[str]:
        """Every framework the log shows, with vLLM on torch_npu read as vLLM-Ascend: a worker's
        traceback names vllm and torch_npu, seldom the plugin, whose fixes are the ones that apply."""
        if self.torch_npu and "vllm" in self.workloads and "vllm-ascend" not in self.workloads:
            return [*self.workloads, "vllm-ascend"]
        return self.workloads

    @property
    def workload(self) -> str | None:
        """The most specific framework shown: a fine-tuning tool over the trainer it drives."""
        workloads = self.shown_workloads
        if not workloads:
            return None
        implied = {IMPLIES[w] for w in workloads if w in IMPLIES}
        specific = [w for w in workloads if w not in implied and w != "custom-kernel"]
        return (specific or workloads)[0]

    @property
    def runtimes(self) -> set[str]:
        """The frameworks whose runtime the job runs on, as the log shows them: `torch` for torch_npu,
        torch's own files or a workload built on PyTorch, else the workload that has its own runtime
        (paddle, mindspore, llama.cpp)."""
        shown = {w if w in NOT_ON_TORCH else "torch" for w in self.workloads if w not in NO_RUNTIME}
        return shown | ({"torch"} if self.runtime == "torch" else set())

    def shows(self, dimension: str) -> set[str]:
        """The values the log shows for a dimension of `applies_to` (workload, launcher, soc, runtime)."""
        if dimension == "workload":
            workloads = self.shown_workloads
            shown = set(workloads) | {IMPLIES[w] for w in workloads if w in IMPLIES}
            return shown | {group for group, members in GROUPS.items() if shown & members}
        if dimension == "launcher":
            return {self.launcher} if self.launcher else set()
        if dimension == "soc":
            return {self.soc.lower()} if self.soc else set()
        if dimension == "runtime":
            return self.runtimes
        return set()

    def observe(self, text: str, shape: bytes | None = None) -> None:
        """Read a line for context. A line of a shape (its key, `normalize.shape_key`) that showed
        context before counts but is not read again: what was seen first stays, and a serving log's
        failed requests would each cost some thirty pattern searches for nothing new."""
        if self.lines_seen >= MAX_LINES:
            return
        if shape is not None and shape in self._shapes_seen:
            self.lines_seen += 1
            return
        gated = gate_text(text)
        if not _ANY.search(text, gated):
            return
        self.lines_seen += 1
        if shape is not None:
            self._shapes_seen.add(shape)
        for name, pattern in _WORKLOADS_GATED:
            if name not in self.workloads and pattern.search(text, gated):
                self.workloads.append(name)
        if self.launcher is None:
            self.launcher = next((name for name, pattern in _LAUNCHERS_GATED if pattern.search(text, gated)), None)
        for name, pattern in _VERSIONS_GATED:
            if name not in self.versions:
                found = pattern.search(text, gated)
                if found:
                    self.versions[name] = next(g for g in found.groups() if g)
        if self.soc is None:
            found = _SOC.search(text, gated)
            if found:
                self.soc = next(g for g in found.groups() if g).replace(" ", "")
        for found in _ENV.finditer(text, gated):
            if not _SUGGESTED.search(text, max(0, found.start() - SUGGESTION_REACH), found.start()):
                self.env.setdefault(found.group(1), found.group(2).strip("\"'").rstrip(".)"))
        if self.runtime is None and _TORCH.search(text, gated):
            self.runtime = "torch"
        if not self.torch_npu and _TORCH_NPU.search(text, gated):
            self.torch_npu = True

    def observe_job(self, command: list[str], environ: Mapping[str, str]) -> None:
        """What a face that starts the job knows before it prints a line: its command line (`vllm
        serve`, `torchrun`, `llamafactory-cli train`) and the settings it inherits (an allocator
        setting exported in the shell is applied though the log never prints it)."""
        self.observe(shlex.join(command))
        for name, value in environ.items():
            if _ENV_NAME.fullmatch(name):
                self.env.setdefault(name, value)

    def merge(self, later: JobContext) -> None:
        """Fold in what a later stretch of the log showed; what was seen first stays."""
        self.workloads += [w for w in later.workloads if w not in self.workloads]
        self.launcher = self.launcher or later.launcher
        for key, value in later.versions.items():
            self.versions.setdefault(key, value)
        self.soc = self.soc or later.soc
        self.runtime = self.runtime or later.runtime
        self.torch_npu = self.torch_npu or later.torch_npu
        for key, value in later.env.items():
            self.env.setdefault(key, value)
        self.lines_seen += later.lines_seen

    def fits(self, applies_to: Mapping[str, Any]) -> bool | None:
        """True when the log shows a value the fix is for (a stack, or a version in its range), False when
        it shows only others, None when silent."""
        verdicts: list[bool | None] = []
        for dimension, wanted in applies_to.items():
            if not wanted:
                continue
            if dimension == "versions":
                verdicts.append(self.within(wanted))
                continue
            wanted_lower = {w.lower() for w in wanted}
            shown = self.shows(dimension)
            if not shown:
                elsewhere = dimension == "workload" and self.runtime == "torch" and wanted_lower <= NOT_ON_TORCH
                verdicts.append(False if elsewhere else None)
                continue
            if dimension == "soc":
                verdicts.append(any(_same_soc(s, w) for s in shown for w in wanted_lower))
            else:
                verdicts.append(bool(shown & wanted_lower))
        if False in verdicts:
            return False
        if True in verdicts:
            return True
        return None

    def within(self, ranges: dict[str, str]) -> bool | None:
        """False when the log shows a version outside one of the ranges, True when it shows one
        inside (and none outside), None when it shows none of these packages' versions."""
        verdicts = [satisfies(self.versions[name], spec) for name, spec in ranges.items() if name in self.versions]
        if False in verdicts:
            return False
        return True if True in verdicts else None

    def applied(self, env: dict[str, str]) -> bool:
        """Whether the log shows every one of these env settings already in force."""
        return bool(env) and all(_same_setting(name, self.env.get(name), value) for name, value in env.items())

    def stack(self) -> dict[str, list[str]]:
        """What ran, as `applies_to` declares a stack: its workload (the family a specific one belongs
        to: vllm for vllm-ascend) and the runtimes it ran on. Another job `fits` it unless it shows others.
        A kernel (NO_RUNTIME) names no stack: one is built and run from any."""
        stack = {"runtime": sorted(self.runtimes)} if self.runtimes else {}
        workload = self.workload
        if workload is not None and workload not in NO_RUNTIME:
            stack["workload"] = [IMPLIES.get(workload, workload)]
        return stack

    def to_json(self) -> dict[str, object]:
        return {
            "launcher": self.launcher,
            "workload": self.workload,
            "workloads": list(self.shown_workloads),
            "versions": dict(self.versions),
            "soc": self.soc,
            "env": dict(self.env),
            "runtime": self.runtime,
            "runtimes": sorted(self.runtimes),
        }


def _same_setting(name: str, shown: str | None, wanted: str) -> bool:
    if shown is None:
        return False
    # A timeout the job already set at least as long as the fix's is that fix, applied.
    if name.upper().endswith(("TIMEOUT", "TIMEOUT_S")) and shown.isdigit() and wanted.isdigit():
        return int(shown) >= int(wanted)
    # PYTORCH_NPU_ALLOC_CONF holds several comma-separated options: one of them is enough.
    return wanted.replace(" ", "").lower() in shown.replace(" ", "").lower()


def workloads_named(text: str) -> list[str]:
    """The workloads a text names (a fix's command line), by the patterns that read them in a log."""
    gated = gate_text(text)
    return [name for name, pattern in _WORKLOADS_GATED if pattern.search(text, gated)]


def stack_text(stack: Mapping[str, list[str]]) -> str:
    """A stack (see `JobContext.stack`) as one table cell: `runtime=torch workload=vllm`."""
    return " ".join(f"{dimension}={','.join(values)}" for dimension, values in sorted(stack.items()))


def parse_stack(text: str) -> dict[str, list[str]]:
    """The stack a `stack_text` cell names; malformed parts are left out."""
    parts = (part.partition("=") for part in text.split())
    return {dimension: values.split(",") for dimension, sep, values in parts if sep and values}


def _same_soc(shown: str, wanted: str) -> bool:
    """Whether the SoC a log shows is (of the line of) the one a fix or cause names, however either is
    written: logs print `Ascend310P3`, `310P3` and `ascend310p`, entries `Ascend310P` and `310P`."""
    shown, wanted = shown.removeprefix("ascend"), wanted.removeprefix("ascend")
    return shown.startswith(wanted) or wanted in shown
