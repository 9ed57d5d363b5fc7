"""Lines that differ only in long hex ids: one shape for the scan's purposes.

A shape is a line with its digits masked, so a serving log's request lines (`Received request
cmpl-3f9a2b7c...-0: prompt: ...`, `Finished request chatcmpl-ecd16485-06a5-...`) are each a shape
of their own: every one went through the prefilters and, where its digits might be a bare code, the
error-line patterns, about 50 us a line (64 MiB of them: 10 s, where ripgrep takes 0.05 s). Here a
new line's shape with its long hex ids masked too is looked up among those that needed nothing
before; such a line needs nothing either, and is not matched. Once a block is settled, the native
table learns the masked shape too (it reads ids as HEX_ID does) and skips such lines itself.

Only ids of HEX_ID's kinds are masked: at least 20 hex digits in one case, or a UUID. Nothing the
KB looks for lies inside such an id: a pattern that matched there would match a random id by
chance, and a digit inside one is no code (`NativeLines` judges digits with ids masked). Error codes
(`0x05000002`, 10 characters) and addresses (`0x7f3a2c1b4d90`) stay as they are. A line whose other
digits a pattern can tell apart (`NativeLines` calls it not alike) teaches nothing.
"""

from __future__ import annotations

from triage.engine.held_lines import Seen
from triage.engine.normalize import masked_ids
from triage.engine.shapes import MATCH_WINDOW

Follower = tuple[Seen, int | None]
LIMIT = 1 << 14
"""Masked shapes remembered before starting over: memory stays flat on a log of distinct lines."""


class HexIds:
    """The masked shapes of lines with hex ids that needed nothing, and the new lines of the block
    being scanned that hold such ids."""

    def __init__(self) -> None:
        self._quiet: set[bytes] = set()
        self._masked: dict[int, bytes] = {}
        """Of the block's new lines with hex ids: their masked shape, by where they start."""

    def split(self, block: bytes, lines: list[Seen]) -> tuple[list[Seen], list[Follower]]:
        """The new lines to match, and those that follow another: a line whose masked shape needed
        nothing before (None), or that of a line to match (where that one starts): it needs what
        that one needs if that one needs nothing."""
        to_match: list[Seen] = []
        followers: list[Follower] = []
        firsts: dict[bytes, int] = {}
        for line in lines:
            # A line longer than a match window is never registered: scanned where it lies.
            masked = masked_ids(block[line[0] : line[1]]) if line[1] - line[0] <= MATCH_WINDOW else None
            if masked is None:
                to_match.append(line)
                continue
            self._masked[line[0]] = masked
            if masked in self._quiet:
                followers.append((line, None))
            elif masked in firsts:
                followers.append((line, firsts[masked]))
            else:
                firsts[masked] = line[0]
                to_match.append(line)
        return to_match, followers

    def masked(self, start: int) -> bytes | None:
        """The masked shape of the block's new line at `start`, if it holds hex ids."""
        return self._masked.get(start)

    def learn(self, start: int) -> bool:
        """Remember that the new line at `start` (holding ids) needed nothing; False if known."""
        masked = self._masked[start]
        if masked in self._quiet:
            return False
        if len(self._quiet) >= LIMIT:
            self._quiet.clear()
        self._quiet.add(masked)
        return True

    def forget(self) -> None:
        """The shape table started over: what it skipped must be learnt again."""
        self._quiet.clear()

    def block_done(self) -> None:
        self._masked.clear()
