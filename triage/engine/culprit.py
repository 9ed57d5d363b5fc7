"""Whose code raised an error no rule knows, and how to update it.

An error raised inside a framework's own code (a traceback's deepest frame in its package) is most
often a bug fixed in a later release, or a call that a newer release of a library it uses makes
differently: in the real corpus's train split, about a third of the fixes the threads confirm are
an update of one package (vllm-ascend, torch_npu, transformers, the runner image, the driver). The
package is read from the traceback's paths, else from the framework the log shows running; nothing
is guessed from outside the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triage.engine.context import JobContext
from triage.engine.unclaimed import FRAME, frame_path
from triage.results import CauseResult, EvidenceLine, FixResult

_INSTALLED = re.compile(r"(?:site|dist)-packages/([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Package:
    name: str
    """As its users say it."""
    commands: tuple[str, ...]
    note: str = ""
    """What to keep in step when updating it."""


_STACK_NOTE = "take a newer release line whole: it pins its vLLM, torch_npu and CANN"
_VLLM_ASCEND_LINE = ("docker pull quay.io/ascend/vllm-ascend:<newer tag>", "pip install vllm==X vllm-ascend==X")
PACKAGES: dict[str, Package] = {
    "vllm_ascend": Package("vLLM-Ascend", _VLLM_ASCEND_LINE, _STACK_NOTE),
    # On an NPU, vLLM runs with the vLLM-Ascend plugin pinned to it: one is not updated without the other.
    "vllm": Package("vLLM and vLLM-Ascend", _VLLM_ASCEND_LINE, _STACK_NOTE),
    "vllm_omni": Package("vLLM-Omni", ("pip install -U vllm-omni",), "with the vLLM(-Ascend) release it names"),
    "sglang": Package("SGLang", ("pip install -U sglang",), "with the sgl-kernel-npu build it names"),
    "torch_npu": Package(
        "torch_npu",
        ("pip install torch-npu==<newest post release of your torch version>",),
        "same torch version, paired CANN",
    ),
    "transformers": Package(
        "transformers", ("pip install -U transformers",), "within the range your framework supports"
    ),
    "llamafactory": Package("LLaMA-Factory", ("git pull && pip install -e .",)),
    "swift": Package("ms-swift", ("pip install -U ms-swift",)),
    "verl": Package("verl", ("git pull && pip install -e .",)),
    "mindspeed": Package("MindSpeed", ("git checkout <the commit your MindSpeed-LLM / MM release lists>",)),
    "mindspeed_llm": Package(
        "MindSpeed-LLM", ("git checkout <newer release tag>",), "with the MindSpeed commit it lists"
    ),
    "magic_pdf": Package("MinerU", ("pip install -U mineru",)),
    "mineru": Package("MinerU", ("pip install -U mineru",)),
    "flag_gems": Package("FlagGems", ("git pull && pip install -e .",), "with the FlagTree / triton-ascend it pins"),
    "triton": Package("triton-ascend", ("pip install -U triton-ascend",), "the release paired with your CANN"),
    "deepspeed": Package("DeepSpeed", ("pip install -U deepspeed",)),
    "paddle": Package("PaddlePaddle and paddle-custom-npu", ("pip install -U paddlepaddle paddle-custom-npu",)),
    "mindspore": Package(
        "MindSpore",
        ("pip install mindspore==<the release paired with your CANN>",),
        "the release paired with your CANN",
    ),
}
"""Packages whose name or update is not simply `pip install -U <directory name>`."""
_WORKLOAD_PACKAGES = {
    "vllm-ascend": "vllm_ascend",
    "vllm": "vllm",
    "hf-trainer": "transformers",
    "sglang": "sglang",
    "llamafactory": "llamafactory",
    "ms-swift": "swift",
    "verl": "verl",
    "mindspeed": "mindspeed",
    "triton-ascend": "triton",
    "paddle": "paddle",
    "mindspore": "mindspore",
}
_WORKLOADS_BUILT = {
    "llama.cpp": Package("llama.cpp", ("git pull && cmake -B build -DGGML_CANN=on && cmake --build build -j",)),
    "mindie": Package("MindIE", ("docker pull <the newer MindIE image for your chip>",), "with its paired CANN"),
    "lmdeploy": Package("lmdeploy and dlinfer", ("pip install -U lmdeploy dlinfer-ascend",)),
}
PLUMBING = frozenset(
    "torch multiprocessing concurrent asyncio threading runpy importlib ray uvicorn starlette fastapi anyio click "
    "typer fire hydra omegaconf _pytest pytest pluggy IPython ipykernel tqdm requests urllib3 aiohttp httpx grpc "
    "zmq numpy yaml pydantic pydantic_core typing_extensions functools contextlib six setuptools pip _distutils_hack "
    "uvloop tornado gunicorn".split()
)
"""Packages an error passes through but is not made in: the caller's code is the one to suspect."""


def _package_of(frame_line: str) -> str | None:
    found = FRAME.search(frame_line)
    if found is None:
        return None
    path = frame_path(found)
    installed = _INSTALLED.search(path)
    name = installed.group(1) if installed else next((part for part in path.split("/") if part in PACKAGES), None)
    return name if name and name not in PLUMBING and not name.startswith("_") else None


def culprit(frames: list[EvidenceLine], before: EvidenceLine | None, context: JobContext) -> tuple[Package, str] | None:
    """The package whose code raised the error, and how the log shows it: the deepest package frame
    of the traceback ending before `before` (any frame, without one there), else the framework the
    log shows running."""
    earlier = [f for f in frames if before is not None and f.source == before.source and f.line < before.line]
    for frame in reversed(earlier or frames):
        name = _package_of(frame.text)
        if name:
            where = frame.text.rsplit("/", 1)[-1].strip()
            pip_name = name.replace("_", "-")
            package = PACKAGES.get(name) or Package(pip_name, (f"pip install -U {pip_name}",))
            return package, f"it is raised in its code ({where})"
    workload = context.workload
    if workload in _WORKLOADS_BUILT:
        return _WORKLOADS_BUILT[workload], "the log shows it running"
    if workload in _WORKLOAD_PACKAGES:
        return PACKAGES[_WORKLOAD_PACKAGES[workload]], "the log shows it running"
    return None


CAUSE_ID = "package-version-or-bug"
CAUSE_PROBABILITY = 0.4
"""What a package that raised an error no rule knows is worth as its cause: most such errors in the
train threads were a release of that package that did not fit the rest of the stack, or its bug."""


def culprit_advice(
    frames: list[EvidenceLine], before: EvidenceLine | None, context: JobContext
) -> tuple[CauseResult | None, list[FixResult]]:
    """The package that raised an unknown error as its likeliest cause, and updating it as the fix
    to try (neither when no package is named)."""
    found = culprit(frames, before, context)
    if found is None:
        return None, []
    package, how = found
    said = f"{how[0].upper()}{how[1:]}"
    keep = f"; {package.note}" if package.note else ""
    cause = CauseResult(
        id=CAUSE_ID,
        title=f"{package.name} does not fit the rest of the stack (a version mismatch: an API one side changed) "
        "or has a bug that a later release fixes",
        probability=CAUSE_PROBABILITY,
        how_to_tell=f"{said}; its tracker or release notes mention the message, and the "
        "versions its requirements list (or a newer release) make it pass.",
    )
    fix = FixResult(
        title=f"Upgrade {package.name} to a release that fixes this error",
        addresses=[CAUSE_ID],
        description=(
            f"{said}: an error inside a framework is most often a bug fixed in a later "
            f"release, or a call a newer release of a library it uses makes differently. Search its tracker "
            f"for the message and update{keep}."
        ),
        commands=list(package.commands),
    )
    return cause, [fix]
