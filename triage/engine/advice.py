"""Which fixes to offer for the job that failed, in which order."""

from __future__ import annotations

from typing import Any

from triage.engine.context import NOT_ON_TORCH, SERVING, TRAINING, JobContext, workloads_named
from triage.results import CauseResult, FixResult, replace


UNLIKELY = 0.05
"""A fix only for causes less likely than this (a prior of a few percent, nothing in the log for
them) comes after every other fix, those made for a stack the log does not show included."""


def order_fixes(
    fixes: list[dict[str, Any]], causes: list[CauseResult], context: JobContext, update: FixResult | None = None
) -> tuple[list[FixResult], list[str]]:
    """Fixes for the job that failed, best first, and notes on those left out.

    A fix for another stack than the one the log shows is dropped; one whose env settings the log
    shows already in force is dropped and said so; fixes for the likeliest causes come first, and
    among equals those made for this job's stack, while one made for a stack the log does not show
    comes after those for any; ways to confirm a cause come after every fix. A
    fix that updates the package that raised the error is `update` (see `culprit`), or none.
    """
    probability = {cause.id: cause.probability for cause in causes}
    kept: list[tuple[tuple[int, int, float, int, int], FixResult]] = []
    notes: list[str] = []
    for position, fix in enumerate(fixes):
        result = FixResult.from_json({k: v for k, v in fix.items() if k not in ("applies_to", "culprit")})
        if fix.get("culprit"):
            if update is None:
                continue
            result = replace(update, addresses=result.addresses, confirmed_by=result.confirmed_by)
        ranges = (fix.get("applies_to") or {}).get("versions") or {}
        if context.within(ranges) is False:
            shown = ", ".join(f"{name} {context.versions[name]}" for name in ranges if name in context.versions)
            notes.append(f"not for the versions this job runs ({shown}): {result.title}")
            continue
        runtime = (fix.get("applies_to") or {}).get("runtime")
        if runtime and context.fits({"runtime": runtime}) is False:
            continue
        applies_to = declared_stacks(fix)
        fits = context.fits(applies_to) if applies_to else None
        if fits is False:
            continue
        result = _commands_for_job(result, context)
        if result.env and context.applied(result.env):
            settings = ", ".join(f"{k}={v}" for k, v in result.env.items())
            notes.append(f"already applied in this job ({settings}): {result.title}")
            continue
        relevance = max((probability.get(c, 0.0) for c in result.addresses), default=0.5)
        diagnostic = result.kind == "diagnostic"
        # A fix made for one stack, where the log does not show which stack ran, is a guess at it: it
        # comes after the fixes for any stack, however likely its cause (a custom kernel's AI Core
        # exception led with vLLM-Ascend's upgrade; leave-thread-out on the train split, the thread's
        # fix among the first two 24 -> 25 of 171, none lost).
        made_for = 0 if fits else 2 if applies_to else 1
        tier = 2 if relevance < UNLIKELY else int(made_for == 2)
        kept.append(((int(diagnostic), tier, -round(relevance, 2), made_for, position), result))
    return [fix for _, fix in sorted(kept, key=lambda item: item[0])], notes


STACKS = SERVING | NOT_ON_TORCH
"""What a command line may be for: a serving engine or a runtime of its own, which a job runs one of (a
library such as diffusers or a kernel package runs inside any of them)."""


def _commands_for_job(fix: FixResult, context: JobContext) -> FixResult:
    """The fix without its command lines for another serving engine or runtime than the job's own: one
    fix often shows the step for each stack (`pip install torch==X torch-npu==X`, then the same for
    vLLM / vLLM-Ascend), and a MindIE job has no use for the vLLM line. A training framework may run
    a serving engine inside (verl's and ms-swift's rollouts), so its job keeps the engines' lines; a
    comment after `#` names examples, not the stack the command is for."""
    kept = [command for command in fix.commands if _for_job(command.split(" #", 1)[0], context)]
    return fix if len(kept) == len(fix.commands) else replace(fix, commands=kept)


def _for_job(command: str, context: JobContext) -> bool:
    named = sorted(name for name in workloads_named(command) if name in STACKS)
    if not named or context.fits({"workload": named}) is not False:
        return True
    return bool(context.shows("workload") & TRAINING) and set(named) <= SERVING


def declared_stacks(fix: dict[str, Any]) -> dict[str, list[str]]:
    """The stacks a KB fix declares it is for (`applies_to`), without the dimensions it leaves empty,
    its version ranges (a range says which releases it needs, not whose job it is for) and its runtime
    (most jobs run on PyTorch and few logs say so: a torch fix is no guess at the stack where the log
    is silent, and is dropped only where another runtime shows)."""
    return {k: v for k, v in (fix.get("applies_to") or {}).items() if v and k not in ("versions", "runtime")}
