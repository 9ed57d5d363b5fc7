"""Check entries against their own examples: a `match` example must make the entry the top
diagnosis, as written and as a launcher prints it, a `no_match` example must not produce it at all."""

from __future__ import annotations

from dataclasses import dataclass

from triage.engine.compiled import CompiledKB
from triage.engine.prefilter import Prefilter, build_prefilter
from triage.engine.scanner import Scanner
from triage.kb.models import Entry
from triage.results import ScanResult


DRESSINGS = (
    ("a torchrun rank's line", "[rank3]: "),
    ("a vLLM worker's error", "(Worker_TP0 pid=12) ERROR 03-11 08:33:36 [multiproc_executor.py:863] "),
)
"""How a job's launcher prints an example's lines: a user pastes them so (see `triage.engine.anchors`)."""


@dataclass(frozen=True)
class ExampleFailure:
    entry_id: str
    kind: str
    """'match' or 'no_match'."""
    index: int
    message: str


class ExampleChecker:
    def __init__(self, kb: CompiledKB, prefilter: Prefilter | None = None) -> None:
        self.kb = kb
        self.prefilter = prefilter or build_prefilter(kb)

    def scan(self, text: str) -> ScanResult:
        scanner = Scanner(self.kb, prefilter=self.prefilter)
        scanner.feed_text(text, "example")
        return scanner.result()

    def failures(self, entry: Entry) -> list[ExampleFailure]:
        out = []
        for index, text in enumerate(entry.examples.match):
            for dressing, prefix in (("", ""), *DRESSINGS):
                dressed = "\n".join(prefix + line for line in text.split("\n"))
                ranked = [d.id for d in self.scan(dressed).diagnoses]
                if not ranked or ranked[0] != entry.id:
                    got = ", ".join(ranked[:3]) or "nothing"
                    printed = f" as {dressing}" if dressing else ""
                    out.append(
                        ExampleFailure(entry.id, "match", index, f"expected top '{entry.id}'{printed}, got {got}")
                    )
                    break
        for index, text in enumerate(entry.examples.no_match):
            if entry.id in {d.id for d in self.scan(text).diagnoses}:
                out.append(ExampleFailure(entry.id, "no_match", index, f"'{entry.id}' fired on a no_match example"))
        return out
