"""The fix an error message suggests itself.

Many frameworks say what to do in the error line: `To use NPU with multiprocessing, you must use the
'spawn' start method`, `Please increase max_num_batched_tokens or decrease max_model_len`. For an
error no rule knows, or a family rule knows only by its kind, that sentence is the most specific
advice there is; it is offered as the message's own, quoted, not as the KB's.
"""

from __future__ import annotations

import re

from triage.engine.context import JobContext
from triage.results import FixResult

_ACTIONS = (
    r"set|use|install|upgrade|update|downgrade|increase|decrease|reduce|lower|raise|add|pass|specify|"
    r"enable|disable|export|switch to|call|import|move|remove|rebuild|recompile|reinstall"
)
_SUGGESTION = re.compile(
    rf"\b(?:please|you (?:must|should|can|may|need to|have to)|try(?: to)?|consider)\s+(?:(?:first|also)\s+)?"
    rf"((?:{_ACTIONS})\b(?:[^.;!?\n\[\]]|\.(?=\w)){{3,160}})",
    re.IGNORECASE,
)
"""An action the message asks for: a verb that changes something (not "check", "see" or "report"), up to
the sentence's end (a dot inside a name, `frob.yaml`, is no end)."""


_GLUED_LABEL = re.compile(r"(?<=[a-z])(?:Solution|Possible Cause|Reason|Cause):")
"""The next field of a CANN message, glued to the sentence before it (`... to specify its shapeSolution: Try
again`): where the action ends."""
_SETTING = re.compile(r"\b([A-Z][A-Z0-9_]{2,})=([^\s,;'\"`]+)")
"""An environment variable the action sets (`ASCEND_LAUNCH_BLOCKING=1`), for the fix's `env`."""
_TO_LOOK = re.compile(
    r"LAUNCH_BLOCKING|debug|stack ?trace|more (?:info|detail)|to (?:get|see|find|print|locate)\b", re.IGNORECASE
)
"""A suggestion for finding out more (`ASCEND_LAUNCH_BLOCKING=1` "for debugging"): how to look, not a fix."""


def suggested_fixes(messages: list[str], context: JobContext) -> tuple[list[FixResult], list[FixResult]]:
    """What the first of these error messages that asks for an action asks: as a fix to offer first,
    or (a way to look closer) a diagnostic to offer after the fixes; neither where the log shows its
    settings already in force. A compiler's `did you mean` is neither: in the corpus it guessed right
    once in six (a header or toolchain lacked the name)."""
    for message in messages:
        asked = _SUGGESTION.search(message)
        if asked is not None and "{" not in asked.group(1):  # "use {backend}": a template, not advice
            action = _GLUED_LABEL.split(" ".join(asked.group(1).split()), maxsplit=1)[0].rstrip(" ,:")
            said = " ".join(asked.group(0).split())
            look = _TO_LOOK.search(message[asked.start() : asked.end() + 60]) is not None
            fix = FixResult(
                title=f"{'Look closer, as' if look else 'Do what'} the message says: {action[0].upper()}{action[1:]}",
                description=f"The error message itself says: “{said}”",
                env=dict(_SETTING.findall(action)),
                kind="diagnostic" if look else "fix",
            )
            if context.applied(fix.env):
                return [], []
            return ([], [fix]) if look else ([fix], [])
    return [], []
