"""Entries that stand for a hang (`stall: true`): their signatures are banners a healthy run prints too
(`Using ... as PyTorch extensions root...`), which say what the job was doing only where a log that has
ended stops on one. Elsewhere the job went past the banner, and the line is chatter."""

from __future__ import annotations

from triage.engine.error_lines import error_kind
from triage.engine.evidence import EntryEvidence
from triage.engine.unclaimed import UnclaimedErrors

STALL_LINES = 5
"""A banner counts where fewer than this many lines follow it to the log's end (the other ranks'
copies of it, a progress line), none of them an error."""


def stalled_on(evidence: EntryEvidence, logs: UnclaimedErrors | None) -> bool:
    """Whether the entry's last own line is where its log stopped: the source was read to its end
    (`UnclaimedErrors.ended`), and only a few lines without an error follow it."""
    last = evidence.last
    if last is None or logs is None or last.source not in logs.ended or not logs.tails.get(last.source):
        return False
    after = [text for number, text in logs.tails[last.source] if number > last.line]
    return len(after) < STALL_LINES and not any(error_kind(text) for text in after)
