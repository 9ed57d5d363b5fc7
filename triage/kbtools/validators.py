"""The checks of `triage kb validate`, one small `Validator` each (the pySigma design).

`validate()` looks at one entry, `finalize()` at the whole set once every entry was seen.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

from triage.engine.confirm import only_inside_words
from triage.kb.loader import entry_regexes
from triage.kb.models import CATEGORIES, Entry
from triage.kb.paths import shipped_kb_dir
from triage.kb.regex_safety import slow_on_long_runs, unsafe_reason
from triage.kbtools.validation import HONEYPOT_MAX_CONFIDENCE, Context, Finding, Target, Validator


class SchemaValidator(Validator):
    name = "schema"
    description = "the file is safe YAML (no duplicate keys) and matches the entry schema (kb/schema.json)"


class FileNameValidator(Validator):
    name = "file_name"
    description = "the file is named <id>.yaml"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.loaded.path.stem != target.entry.id:
            yield self.finding(
                target, f"file name '{target.loaded.path.stem}' differs from id '{target.entry.id}'", "id"
            )


class CategoryFolderValidator(Validator):
    name = "category_folder"
    description = "the file lies in the folder named after its category: <kb>/<category>/<id>.yaml"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        folder = target.loaded.path.parent.name
        if folder != target.entry.category:
            yield self.finding(
                target, f"category '{target.entry.category}' but the file is in folder '{folder}'", "category"
            )


class KnownCategoryValidator(Validator):
    name = "known_category"
    description = "the category, and any cause's own category, is one of the standard categories"
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        known = ", ".join(CATEGORIES)
        if target.entry.category not in CATEGORIES:
            yield self.finding(target, f"unknown category '{target.entry.category}' (known: {known})", "category")
        for cause in target.entry.causes:
            if cause.category is not None and cause.category not in CATEGORIES:
                yield self.finding(
                    target, f"cause '{cause.id}': unknown category '{cause.category}' (known: {known})", "category"
                )


class UniqueIdValidator(Validator):
    name = "unique_id"
    description = "ids are unique within a KB directory; a user directory may override a shipped id"

    def __init__(self) -> None:
        self.by_id: dict[str, list[Target]] = defaultdict(list)

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        self.by_id[target.entry.id].append(target)
        return ()

    def finalize(self, ctx: Context) -> Iterator[Finding]:
        shipped = shipped_kb_dir().resolve()
        for entry_id, targets in self.by_id.items():
            first_in_root: dict[Path, Target] = {}
            for target in targets:
                first = first_in_root.setdefault(target.root, target)
                if first is not target:
                    yield self.finding(target, f"duplicate id '{entry_id}' (also in {first.loaded.path})", "id")
            user_roots = [root for root in first_in_root if root != shipped]
            if len(user_roots) > 1:
                # Overriding the shipped KB is the point of user dirs; two user dirs fighting over
                # one id is probably an accident, since only the last one given is used.
                later = first_in_root[user_roots[-1]]
                others = ", ".join(str(first_in_root[root].loaded.path) for root in user_roots[:-1])
                yield self.finding(
                    later, f"id '{entry_id}' is also defined in {others}; this one wins", "id", severity="warning"
                )


class RegexSafetyValidator(Validator):
    name = "regex_safety"
    description = "every regex compiles and cannot backtrack catastrophically (no nested or overlapping quantifiers)"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        for path, pattern in entry_regexes(target.entry):
            reason = unsafe_reason(pattern)
            if reason:
                yield self.finding(target, f"{pattern!r}: {reason}", *path)


class LongLineValidator(Validator):
    name = "long_line"
    description = (
        "every regex reads a 16 KB line in one pass (it starts where a run of letters, digits or spaces starts)"
    )
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        for path, pattern in entry_regexes(target.entry):
            slow = slow_on_long_runs(pattern)
            if slow is not None:
                run, took = slow
                advice = r"start it where a run starts: (?<!\w), (?<!\S), \b or ^"
                yield self.finding(target, f"{pattern!r} takes {took:.1f} s on a 16 KB line of {run}: {advice}", *path)


class HasExamplesValidator(Validator):
    name = "has_examples"
    description = "the entry has at least one `examples.match` snippet"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if not target.entry.examples.match:
            yield self.finding(
                target, "no examples.match: add a log snippet on which this entry must be the top diagnosis", "examples"
            )


class ExamplesValidator(Validator):
    name = "examples"
    description = (
        "on each match example the entry is the top diagnosis, also as a torchrun rank or a vLLM worker prints it;"
        " on each no_match example it does not fire"
    )

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        if not ctx.active(target):
            source = ctx.kb.sources[target.entry.id].path
            yield self.finding(target, f"not run: overridden by {source}", "id", severity="info")
            return
        for failure in ctx.checker.failures(target.entry):
            yield self.finding(
                target, f"{failure.kind}[{failure.index}]: {failure.message}", "examples", failure.kind, failure.index
            )


class ReferencesValidator(Validator):
    name = "references"
    description = "entries with status test or stable cite at least one reference"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.entry.status in ("test", "stable") and not target.entry.references:
            yield self.finding(
                target, f"status '{target.entry.status}' needs references (or set status: experimental)", "status"
            )


class PlaceholderValidator(Validator):
    name = "placeholders"
    description = "no TODO placeholders are left from `triage kb new`; an entry that has some is a draft"
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        left = [loc for loc, text in _strings(target.entry.model_dump(exclude={"examples"})) if "TODO" in text]
        if not left:
            return
        where = ", ".join(".".join(map(str, loc)) for loc in left)
        if target.entry.status == "draft":
            yield self.finding(target, f"{len(left)} TODO placeholders left: {where}", *left[0])
        else:
            # Only a draft ranks below curated entries: an unfinished entry must not pass for one.
            message = f"{len(left)} TODO placeholders left ({where}) in a '{target.entry.status}' entry: fill them or set status: draft"
            yield self.finding(target, message, "status", severity="error")


class TorchFixValidator(Validator):
    name = "torch_fixes"
    description = "a fix that sets a torch_npu setting or runs torch code says it is for PyTorch jobs"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        for index, fix in enumerate(target.entry.fixes):
            if fix.applies_to.runtime or fix.applies_to.workload:
                continue
            torch_env = [name for name in fix.env if _TORCH_ENV.match(name)]
            torch_code = fix.code is not None and bool(_TORCH_CODE.search(fix.code.after))
            if torch_env or torch_code:
                what = f"sets {', '.join(torch_env)}" if torch_env else "its code calls torch"
                message = (
                    f"fix '{fix.title}' {what}: add `applies_to: {{runtime: [torch]}}` so that MindSpore,"
                    " Paddle and llama.cpp jobs are not offered it"
                )
                yield self.finding(target, message, "fixes", index)


_TORCH_ENV = re.compile(r"PYTORCH_|TORCH_")
_TORCH_CODE = re.compile(r"\btorch(?:_npu)?\.|\bimport torch\b")


class DraftValidator(Validator):
    name = "draft"
    description = "the entry is finished: status `draft` ranks below curated entries (--strict refuses it)"
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.entry.status == "draft":
            yield self.finding(target, "status 'draft': fill in the TODOs, then set status: experimental", "status")


class OverlapValidator(Validator):
    name = "overlap"
    description = (
        "report other specific entries that also fire on this entry's match examples (family rules "
        "overlap by design: they stand under the specific entries of their family)"
    )
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        if not ctx.active(target) or target.entry.family:
            return
        related = set(target.entry.related)
        others: dict[str, list[int]] = defaultdict(list)
        for index, text in enumerate(target.entry.examples.match):
            for diagnosis in ctx.scan(text).diagnoses:
                if diagnosis.id in related or diagnosis.id == target.entry.id:
                    continue
                if not (diagnosis.generic or diagnosis.family or diagnosis.guess):
                    others[diagnosis.id].append(index)
        for other, indices in sorted(others.items()):
            where = ", ".join(f"match[{i}]" for i in indices)
            yield self.finding(
                target, f"'{other}' also fires on {where}: make the signatures more specific or relate them", "examples"
            )


class _BaselineValidator(Validator):
    """Scan baseline logs once; a target entry that fires (above `max_confidence`) is a finding."""

    kind: ClassVar[Literal["healthy", "honeypot"]]
    max_confidence: ClassVar[float]

    def finalize(self, ctx: Context) -> Iterator[Finding]:
        targets = {target.entry.id: target for target in ctx.active_targets()}
        for log in getattr(ctx.baselines, self.kind):
            for diagnosis in ctx.scan_file(log).diagnoses:
                target = targets.get(diagnosis.id)
                if target is not None and diagnosis.confidence >= self.max_confidence:
                    line = diagnosis.evidence[0].line if diagnosis.evidence else "?"
                    message = f"fires on {self.kind} log {log}:{line} (confidence {diagnosis.confidence:.2f})"
                    yield self.finding(target, message, "signatures")


class HealthyLogsValidator(_BaselineValidator):
    name = "healthy_logs"
    description = "no entry fires on the healthy logs of logs_samples/labels.yaml"
    kind = "healthy"
    max_confidence = 0.0


class HoneypotValidator(_BaselineValidator):
    name = "honeypot"
    description = f"no entry reaches confidence {HONEYPOT_MAX_CONFIDENCE} on the honeypot log (generic error chatter)"
    kind = "honeypot"
    max_confidence = HONEYPOT_MAX_CONFIDENCE


class HarmlessLinesValidator(Validator):
    name = "harmless_lines"
    description = "no signature matches a line of the harmless corpus (logs_samples/harmless/)"
    causes = False
    """Which patterns this check holds to the corpus: the entry's own signatures, or its causes' evidence."""

    def finalize(self, ctx: Context) -> Iterator[Finding]:
        from triage.engine.confirm import confirm
        from triage.engine.normalize import decode_line

        lines = [
            (path, number, decode_line(raw))
            for path in ctx.baselines.harmless
            for number, raw in enumerate(path.read_bytes().splitlines(), 1)
        ]
        targets = {target.entry.id: target for target in ctx.active_targets()}
        kb = ctx.checker.kb
        for signature in kb.signatures:
            entry = kb.entries[signature.entry]
            target = targets.get(entry.id)
            if (
                target is None
                or signature.kind == "fuzzy"
                or signature.against
                or (signature.cause is not None) != self.causes
                or (entry.stall and signature.cause is None)  # a banner of healthy runs, counted only where a log ends
            ):
                continue  # fuzzy signatures are held to the harmless logs by healthy_logs, through the scanner
            hit = next(((path, number) for path, number, text in lines if confirm(signature, text)), None)
            if hit is not None:
                where = (
                    ("signatures",)
                    if signature.cause is None
                    else ("causes", _cause_index(target.entry, signature.cause))
                )
                what = "signature" if signature.cause is None else f"cause '{signature.cause}' evidence"
                yield self.finding(
                    target, f"{what} {signature.pattern!r} matches harmless line {hit[0]}:{hit[1]}", *where
                )


class HarmlessCauseLinesValidator(HarmlessLinesValidator):
    name = "harmless_cause_lines"
    description = (
        "cause-evidence patterns that match a line of the harmless corpus: context evidence (a dtype, an "
        "allocator setting) may, since it counts only near the entry's own lines; check it is meant"
    )
    severity = "warning"
    causes = True


class CauseEvidenceWordsValidator(Validator):
    name = "cause_evidence_words"
    description = (
        "a cause's evidence pattern that finds a line of the entry's examples only inside a word: cause evidence "
        "counts as whole words, so it never counts there (spell the word out: initiali[sz]e, (?:aclrt|rt)?SetDevice)"
    )

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        lines = [line for example in target.entry.examples.match for line in example.splitlines()]
        for index, cause in enumerate(target.entry.causes):
            for number, evidence in enumerate(cause.evidence):
                source = evidence.regex_source
                inside = next((found for line in lines if source and (found := only_inside_words(source, line))), None)
                if inside is not None:
                    message = f"cause '{cause.id}' evidence finds {inside!r} only inside a word of an example"
                    yield self.finding(target, message, "causes", index, "evidence", number)


def _cause_index(entry: Entry, cause: str) -> int:
    return next(index for index, known in enumerate(entry.causes) if known.id == cause)


class ExclusionNamesValidator(Validator):
    name = "exclusions"
    description = "validation.exclude names existing checks"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        known = {validator.name for validator in VALIDATORS}
        for index, exclusion in enumerate(target.entry.validation.exclude):
            if exclusion.validator not in known or exclusion.validator in UNSKIPPABLE:
                message = (
                    f"cannot exclude '{exclusion.validator}' (excludable: {', '.join(sorted(known - UNSKIPPABLE))})"
                )
                yield self.finding(target, message, "validation", "exclude", index, "validator")


VALIDATORS: tuple[type[Validator], ...] = (
    SchemaValidator,
    FileNameValidator,
    CategoryFolderValidator,
    KnownCategoryValidator,
    UniqueIdValidator,
    RegexSafetyValidator,
    LongLineValidator,
    HasExamplesValidator,
    ExamplesValidator,
    ReferencesValidator,
    PlaceholderValidator,
    DraftValidator,
    TorchFixValidator,
    OverlapValidator,
    HealthyLogsValidator,
    HoneypotValidator,
    HarmlessLinesValidator,
    HarmlessCauseLinesValidator,
    CauseEvidenceWordsValidator,
    ExclusionNamesValidator,
)
# file_name too: the loader refuses such a file whatever the entry says, so skipping the check would
# let an entry validate that no scan ever loads.
STRICT_CHECKS = frozenset({PlaceholderValidator.name, DraftValidator.name})
"""Checks whose warnings are errors under --strict: unfinished entries do not ship."""
UNSKIPPABLE = frozenset({"schema", "unique_id", "exclusions", "file_name"}) | STRICT_CHECKS


def _strings(value: Any, loc: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*loc, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*loc, index))
