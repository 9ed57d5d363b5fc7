"""The KB compiled for matching: every signature flattened, regexes compiled, fuzzy texts templated."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal, TypeVar

from typing import Any

from triage.engine.anchors import after_prefix, unanchored
from triage.engine.codes import CodeRow, CodeTable
from triage.engine.error_lines import error_kind, message_of
from triage.engine.nearest import (
    FRAMES_SUFFIX,
    WRAPPER,
    Neighbour,
    NeighbourIndex,
    ReportedCase,
    informative,
    reported_cases,
)
from triage.engine.normalize import template

if TYPE_CHECKING:
    from triage.kb.loader import KnowledgeBase
    from triage.kb.models import Entry, ExtractKind, Signature

T = TypeVar("T")

# Lines that may carry a reworded error message. Fuzzy signatures only look at lines that contain
# one of these, which keeps fuzzy matching off the millions of healthy step lines. Words that healthy
# chatter repeats (transformers' "use_cache=True is incompatible with gradient checkpointing", printed
# by most fine-tuning runs) are left out: each line that holds one costs a trip through Python.
TRIGGER_PATTERNS: tuple[str, ...] = (
    r"error",
    r"fail",
    r"exception",
    r"fault",
    r"abort",
    r"time[ds ]?\s?out",
    r"\bnan\b",
    r"overflow",
    r"out of memory",
    r"\boom\b",
    r"not (?:currently )?support",
    r"unsupported",
    r"not implemented",
    r"fall(?:s|ing)? ?back",
    r"segmentation",
    r"core dump",
    r"sig(?:segv|abrt|bus|kill)",
    r"killed",
    r"undefined symbol",
    r"cannot open",
    r"no such file",
    r"mismatch",
    r"traceback",
    r"recompil",
    r"hang",
    r"stuck",
    r"invalid",
    r"illegal",
    r"deadlock",
    r"exit ?code|exit status|terminate called|\bwhat\(\):",
    # The failure words of error_lines._SYMPTOM that none of the above covers: a line that says only
    # them (a linker's "undefined reference to", pip's resolver, a checkpoint's keys, a numeric check)
    # must reach the safety net. Not a bare "inf": benchmarks print "request rate: inf" when all is well.
    r"undefined reference|unsatisfiable|no solution found|could not find a version|command not found|"
    r"conflicting dependencies|conflict is caused|resolutionimpossible|(?:missing|unexpected) key\(s\)|"
    r"within tolerance|allclose\(|no kernel|any binary",
    *(
        # Chinese error words, in UTF-8 and as GBK bytes (Chinese-locale CANN logs): error, failed,
        # reported an error, exception.
        alternative
        for word in ("错误", "失败", "报错", "异常")
        for alternative in (word, "".join(f"\\x{byte:02x}" for byte in word.encode("gbk")))
    ),
)
CASE_SENSITIVE_TRIGGERS: tuple[str, ...] = (
    r"\bE[A-Z0-9]\d{4}\b",  # CANN error codes: EZ1001, EI0002, E40021
    r"\bERR\d{5}\b",  # torch_npu error codes: ERR00100, ERR02200
    r"(?:^|[\s\]:])\[?[EF]\d{4}(?:\d{4})? \d\d:\d\d:\d\d\.\d",  # glog's E / F lines: E1208 11:52:44.73 ...
)
"""Upper-case codes. Case-insensitive, such a class-only pattern runs several times slower."""


@dataclass(frozen=True)
class CompiledSignature:
    """One signature, ready to match. Regexes compile on first use: a scan touches only the few
    signatures its prefilter flags, and a cached KB then loads without compiling hundreds of them."""

    index: int
    entry: int
    cause: str | None
    """None for the entry's own signatures; a cause id for that cause's evidence."""
    against: bool
    """Evidence against the cause (it drops when this matches)."""
    kind: Literal["text", "regex", "fuzzy"]
    pattern: str
    weight: float
    min_score: float
    regex_source: str | None
    """The regex to search (text signatures escaped); None for fuzzy signatures."""
    fuzzy_template: str | None
    exclude_sources: tuple[str, ...]
    extract_sources: tuple[tuple[str, str | None, ExtractKind], ...]
    """(name, regex with one group, or None for a named group of the signature's regex, kind)."""
    off: bool = False
    """A signature of an entry that a later KB directory overrides: kept in its place, so that the
    earlier directory's compiled databases still serve, but it confirms no line."""

    @cached_property
    def regex(self) -> re.Pattern[str] | None:
        """The pattern that confirms a line, an anchor at a line's start read after its prefixes (see `anchors`)."""
        return re.compile(after_prefix(self.regex_source), re.IGNORECASE) if self.regex_source is not None else None

    @property
    def candidate_source(self) -> str | None:
        """What the prefilters search for this signature: its regex without leading anchors."""
        return unanchored(self.regex_source) if self.regex_source is not None else None

    @cached_property
    def excludes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(after_prefix(p), re.IGNORECASE) for p in self.exclude_sources)

    @cached_property
    def extract(self) -> tuple[tuple[str, re.Pattern[str] | None, ExtractKind], ...]:
        return tuple(
            (name, re.compile(p, re.IGNORECASE) if p is not None else None, kind)
            for name, p, kind in self.extract_sources
        )

    def excluded(self, text: str) -> bool:
        return self.off or any(pattern.search(text) for pattern in self.excludes)


@dataclass(frozen=True)
class CauseCard:
    id: str
    title: str
    prior: float
    how_to_tell: str
    conditions: tuple[tuple[str, str, str | float, float], ...]
    """(left, op, right, factor) comparisons of extracted values."""
    likely_when: dict[str, list[str]] = field(default_factory=dict)
    category: str | None = None
    """The failure's category when this cause leads, where it differs from the entry's."""


@dataclass(frozen=True)
class EntryCard:
    """What ranking needs of an entry, in plain data: the scan path then never builds the pydantic
    KB models, which cost more than scanning a small log."""

    id: str
    category: str
    title: str
    severity: str
    status: str
    summary: str
    generic: bool
    family: bool
    stall: bool
    causes: tuple[CauseCard, ...]
    fixes: tuple[dict[str, Any], ...]
    probes: tuple[str, ...]
    references: tuple[dict[str, Any], ...]
    related: tuple[str, ...]
    layer: int = 0
    """Which loaded KB directory the entry came from (see `KnowledgeBase.layer_of`)."""
    overridden: bool = False
    """An entry a later directory replaces by id: its signatures are kept switched off (see
    `CompiledSignature.off`); it never fires, lends no neighbour lines and no advice."""

    @classmethod
    def of(cls, entry: Entry, layer: int = 0, *, overridden: bool = False) -> EntryCard:
        return cls(
            id=entry.id,
            category=entry.category,
            title=entry.title,
            severity=entry.severity,
            status=entry.status,
            summary=entry.summary,
            generic=entry.generic,
            family=entry.family,
            stall=entry.stall,
            causes=tuple(
                CauseCard(
                    id=cause.id,
                    title=cause.title,
                    prior=cause.prior,
                    how_to_tell=cause.how_to_tell,
                    conditions=tuple((c.left, c.op, c.right, c.factor) for c in cause.conditions),
                    likely_when=cause.likely_when.as_dict(),
                    category=cause.category,
                )
                for cause in entry.causes
            ),
            fixes=tuple(fix.model_dump(mode="json") for fix in entry.fixes),
            probes=tuple(entry.probes),
            references=tuple(ref.model_dump(mode="json") for ref in entry.references),
            related=tuple(entry.related),
            layer=layer,
            overridden=overridden,
        )


PrefilterState = tuple[tuple[bytes, ...], list[str]]
"""A backend's serialized databases (one per run of KB directories, see `triage.engine.hs_parts`)
and the patterns it could not take."""


@dataclass(frozen=True)
class CompiledKB:
    entries: tuple[EntryCard, ...]
    signatures: tuple[CompiledSignature, ...]
    exact: tuple[int, ...]
    """Indices of text and regex signatures."""
    fuzzy: tuple[int, ...]
    """Indices of fuzzy signatures."""
    prefilter_state: dict[str, PrefilterState] = field(default_factory=dict, compare=False)
    """Serialized prefilter databases by backend, so a cached KB skips compiling them."""
    neighbours: tuple[Neighbour, ...] = ()
    """Labelled error lines for the safety net's nearest-neighbour guess."""
    codes: tuple[CodeRow, ...] = ()
    """Error codes and the category each points at (see `triage.engine.codes`)."""
    cases: tuple[ReportedCase, ...] = ()
    """What the threads behind the neighbours' corpus cases said (see `NeighbourIndex.reported`)."""
    word_counts: dict[str, dict[str, int]] | None = field(default=None, compare=False)
    """The neighbours' word model as a cache kept it (see `NeighbourIndex.word_counts`); None: counted
    at the first guess."""

    @cached_property
    def code_table(self) -> CodeTable:
        return CodeTable(self.codes)

    @cached_property
    def neighbour_index(self) -> NeighbourIndex:
        index = NeighbourIndex(self.neighbours, self.cases)
        if self.word_counts is not None:
            index.seed_word_counts(self.word_counts)
        return index

    def without_neighbours(self, labels: frozenset[str], **changes: Any) -> CompiledKB:
        """The KB less the neighbour lines of these labels (see `NeighbourIndex.without`), with any
        other fields `changes` gives: its neighbour index is derived, not built again."""
        index = self.neighbour_index.without(labels)
        if index is self.neighbour_index and not changes:
            return self
        kept = replace(self, neighbours=index.documents, word_counts=None, **changes)
        vars(kept)["neighbour_index"] = index  # seeds the cached_property
        return kept

    @property
    def fuzzy_templates(self) -> list[str]:
        return [self.signatures[i].fuzzy_template or "" for i in self.fuzzy]

    def directory_runs(self, items: Iterable[T], signature: Callable[[T], int | None]) -> list[list[T]]:
        """`items` in runs, one per KB directory of the signature each stands for (see
        `EntryCard.layer`); an item that stands for none (None: a fixed word) joins the run it comes in."""
        runs: list[list[T]] = [[]]
        layer = None
        for item in items:
            index = signature(item)
            here = None if index is None else self.entries[self.signatures[index].entry].layer
            if here is not None and layer is not None and here != layer:
                runs.append([])
            layer = here if here is not None else layer
            runs[-1].append(item)
        return runs


def _compile_signature(
    index: int, entry_index: int, cause: str | None, sig: Signature, *, against: bool = False, off: bool = False
) -> CompiledSignature:
    regex_source = sig.regex_source
    extract: list[tuple[str, str | None, ExtractKind]] = []
    if regex_source is not None and "(?P<" in regex_source:  # compiling a thousand regexes costs seconds
        groups = re.compile(regex_source).groupindex
        extract += [(name, None, sig.extract[name].kind if name in sig.extract else "str") for name in groups]
    extract += [(name, e.regex, e.kind) for name, e in sig.extract.items() if e.regex is not None]
    return CompiledSignature(
        index=index,
        entry=entry_index,
        cause=cause,
        against=against,
        kind=sig.kind,
        pattern=sig.pattern,
        weight=sig.weight,
        min_score=sig.min_score,
        regex_source=regex_source,
        fuzzy_template=template(sig.fuzzy) if sig.fuzzy is not None else None,
        exclude_sources=tuple(sig.exclude),
        extract_sources=tuple(extract),
        off=off,
    )


def compile_kb(kb: KnowledgeBase) -> CompiledKB:
    # Directory by directory: the signatures of the shipped KB then keep their numbers when user
    # entries are added, and its compiled databases serve any KB set that includes it (see
    # `triage.engine.hs_parts`).
    # An entry a later directory overrides keeps its place, switched off: the earlier directory's
    # run of patterns is then the same with or without the override (`KnowledgeBase.overridden`).
    placed = [(kb.layer_of.get(e.id, 0), e.id, False, e) for e in kb.entries.values()]
    placed += [(layer, e.id, True, e) for e, layer in kb.overridden]
    placed.sort(key=lambda item: item[:2])
    signatures: list[CompiledSignature] = []
    for entry_index, (_, _, off, entry) in enumerate(placed):
        for sig in entry.signatures:
            signatures.append(_compile_signature(len(signatures), entry_index, None, sig, off=off))
        for cause in entry.causes:
            for sig in cause.evidence:
                signatures.append(_compile_signature(len(signatures), entry_index, cause.id, sig, off=off))
            for sig in cause.against:
                signatures.append(
                    _compile_signature(len(signatures), entry_index, cause.id, sig, against=True, off=off)
                )
    return CompiledKB(
        entries=tuple(EntryCard.of(entry, layer, overridden=off) for layer, _, off, entry in placed),
        signatures=tuple(signatures),
        exact=tuple(s.index for s in signatures if s.kind != "fuzzy"),
        fuzzy=tuple(s.index for s in signatures if s.kind == "fuzzy"),
        neighbours=_neighbours([entry for _, _, off, entry in placed if not off], kb.neighbours),
        codes=tuple(sorted(kb.codes, key=lambda row: "*" in row[0])),
        cases=reported_cases(kb.cases),
    )


def _neighbours(models: list[Entry], rows: list[tuple[str, str, str]]) -> tuple[Neighbour, ...]:
    """Every error line of the entries' match examples, then the neighbours files' rows, deduplicated.

    A wrapper's lines (EZ9999, ERR00100) say nothing of the failure's category: they are labelled
    as wrappers, so that an unknown line that resembles one is set aside rather than voting.
    """
    labelled = [
        (line, WRAPPER if entry.generic else entry.category, f"entry:{entry.id}")
        for entry in models
        for line in _example_lines(entry)
    ]
    labelled += [(line, category, label) for category, label, line in rows]
    out: dict[tuple[str, str], Neighbour] = {}
    for line, category, label in labelled:
        masked = template(message_of(line))
        if informative(masked):
            out.setdefault((masked, category), (masked, category, label))
    # A wrapper's line quoted in another entry's example (or a corpus log) is still a wrapper's.
    wrapped = {masked for masked, category in out if category == WRAPPER}
    kept = tuple(row for (masked, category), row in out.items() if category == WRAPPER or masked not in wrapped)
    return kept + tuple(
        (template(_prose(entry)), entry.category, f"entry:{entry.id}{FRAMES_SUFFIX}")
        for entry in models
        if not entry.generic
    )


def _prose(entry: Entry) -> str:
    """What an entry says of its failure in words (title, summary, its causes' titles): a words-only
    document for the word model, so that an unknown line's words meet the family the KB describes with
    them, not only those its example lines happen to print. Leave-thread-out on the train split: top-1
    70.1 -> 70.6%, top-3 85.8 -> 86.2% (title and summary alone 70.3%; with the causes' how-to-tell
    70.2% / 86.5%)."""
    return " ".join([entry.title, entry.summary, *(cause.title for cause in entry.causes)])


def _example_lines(entry: Entry) -> list[str]:
    lines = []
    for example in entry.examples.match:
        rows = example.splitlines()
        lines += [line for line in rows if error_kind(line)] or [max(rows or [""], key=len)]
    return lines
