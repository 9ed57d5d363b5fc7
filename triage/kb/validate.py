"""`triage kb validate`: checks that a KB entry is well formed, safe and well behaved.

Each check is a small `Validator` in `VALIDATORS` (the pySigma design): `validate()` looks at one
entry, `finalize()` at the whole set once every entry was seen. Findings carry the validator's
name, a severity and file:line. An entry may skip a check only with a written reason, in
`validation.exclude`. `--strict` (what CI runs) also refuses unfinished entries: the warnings of
the checks in `STRICT_CHECKS` become errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from triage.kb.loader import KBError, KnowledgeBase, LoadedEntry, entry_files, load_entry, load_kb
from triage.kb.models import CATEGORIES, Entry, Signature
from triage.kb.paths import shipped_kb_dir
from triage.kb.regex_safety import unsafe_reason
from triage.kb.samples import Baselines
from triage.results import ScanResult

Severity = Literal["error", "warning", "info"]
HONEYPOT_MAX_CONFIDENCE = 0.5


@dataclass(frozen=True)
class Finding:
    validator: str
    severity: Severity
    path: Path
    line: int | None
    message: str
    entry_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.severity}: [{self.validator}] {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "validator": self.validator,
            "severity": self.severity,
            "file": str(self.path),
            "line": self.line,
            "entry": self.entry_id,
            "message": self.message,
        }


@dataclass(frozen=True)
class Target:
    """An entry file under validation, with the KB directory it belongs to."""

    loaded: LoadedEntry
    root: Path

    @property
    def entry(self) -> Entry:
        return self.loaded.entry


@dataclass
class Context:
    """What validators share: the merged KB the entries will run in, and the baseline logs."""

    targets: list[Target]
    kb: KnowledgeBase
    baselines: Baselines
    _checker: Any = None
    _scans: dict[str, ScanResult] = field(default_factory=dict)

    @property
    def checker(self) -> Any:
        if self._checker is None:  # compiling the KB is the slow part: only when a check needs it
            from triage.engine.compiled import compile_kb
            from triage.kb.examples import ExampleChecker

            self._checker = ExampleChecker(compile_kb(self.kb))
        return self._checker

    def scan(self, text: str) -> ScanResult:
        if text not in self._scans:
            self._scans[text] = self.checker.scan(text)
        return self._scans[text]

    def scan_file(self, path: Path) -> ScanResult:
        from triage.engine.scanner import Scanner
        from triage.scanning import scan_sources

        scanner = Scanner(self.checker.kb, prefilter=self.checker.prefilter)
        scan_sources(scanner, [str(path)])
        return scanner.result()

    def active(self, target: Target) -> bool:
        """False when another directory's entry with the same id replaces this one at scan time."""
        source = self.kb.sources.get(target.entry.id)
        return source is not None and source.path == target.loaded.path

    def active_targets(self) -> list[Target]:
        return [target for target in self.targets if self.active(target)]


class Validator:
    name: ClassVar[str]
    description: ClassVar[str]
    severity: ClassVar[Severity] = "error"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        return ()

    def finalize(self, ctx: Context) -> Iterable[Finding]:
        return ()

    def finding(self, target: Target, message: str, *loc: Any, severity: Severity | None = None) -> Finding:
        return Finding(
            self.name, severity or self.severity, target.loaded.path, target.loaded.line(*loc), message, target.entry.id
        )


class SchemaValidator(Validator):
    name = "schema"
    description = "the file is safe YAML (no duplicate keys) and matches the entry schema (kb/schema.json)"


class FileNameValidator(Validator):
    name = "file_name"
    description = "the file is named <id>.yaml"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.loaded.path.stem != target.entry.id:
            yield self.finding(target, f"file name '{target.loaded.path.stem}' differs from id '{target.entry.id}'", "id")


class CategoryFolderValidator(Validator):
    name = "category_folder"
    description = "the file lies in the folder named after its category: <kb>/<category>/<id>.yaml"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        folder = target.loaded.path.parent.name
        if folder != target.entry.category:
            yield self.finding(target, f"category '{target.entry.category}' but the file is in folder '{folder}'", "category")


class KnownCategoryValidator(Validator):
    name = "known_category"
    description = "the category is one of the standard categories"
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.entry.category not in CATEGORIES:
            known = ", ".join(CATEGORIES)
            yield self.finding(target, f"unknown category '{target.entry.category}' (known: {known})", "category")


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
                yield self.finding(later, f"id '{entry_id}' is also defined in {others}; this one wins", "id", severity="warning")


class RegexSafetyValidator(Validator):
    name = "regex_safety"
    description = "every regex compiles and cannot backtrack catastrophically (no nested or overlapping quantifiers)"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        for loc, signature in _signatures(target.entry):
            patterns: list[tuple[tuple[Any, ...], str]] = [(("regex",), signature.regex)] if signature.regex else []
            patterns += [(("exclude", i), pattern) for i, pattern in enumerate(signature.exclude)]
            patterns += [(("extract", name), pattern) for name, pattern in signature.extract.items()]
            for sub, pattern in patterns:
                reason = unsafe_reason(pattern)
                if reason:
                    yield self.finding(target, f"{pattern!r}: {reason}", *loc, *sub)


class HasExamplesValidator(Validator):
    name = "has_examples"
    description = "the entry has at least one `examples.match` snippet"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if not target.entry.examples.match:
            yield self.finding(target, "no examples.match: add a log snippet on which this entry must be the top diagnosis", "examples")


class ExamplesValidator(Validator):
    name = "examples"
    description = "on each match example the entry is the top diagnosis; on each no_match example it does not fire"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        if not ctx.active(target):
            source = ctx.kb.sources[target.entry.id].path
            yield self.finding(target, f"not run: overridden by {source}", "id", severity="info")
            return
        for failure in ctx.checker.failures(target.entry):
            yield self.finding(target, f"{failure.kind}[{failure.index}]: {failure.message}", "examples", failure.kind, failure.index)


class ReferencesValidator(Validator):
    name = "references"
    description = "entries with status test or stable cite at least one reference"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.entry.status in ("test", "stable") and not target.entry.references:
            yield self.finding(target, f"status '{target.entry.status}' needs references (or set status: experimental)", "status")


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


class DraftValidator(Validator):
    name = "draft"
    description = "the entry is finished: status `draft` ranks below curated entries (--strict refuses it)"
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterable[Finding]:
        if target.entry.status == "draft":
            yield self.finding(target, "status 'draft': fill in the TODOs, then set status: experimental", "status")


class OverlapValidator(Validator):
    name = "overlap"
    description = "report other specific entries that also fire on this entry's match examples"
    severity = "warning"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        if not ctx.active(target):
            return
        others: dict[str, list[int]] = defaultdict(list)
        for index, text in enumerate(target.entry.examples.match):
            for diagnosis in ctx.scan(text).diagnoses:
                if diagnosis.id != target.entry.id and not diagnosis.generic:
                    others[diagnosis.id].append(index)
        for other, indices in sorted(others.items()):
            where = ", ".join(f"match[{i}]" for i in indices)
            yield self.finding(target, f"'{other}' also fires on {where}: make the signatures more specific or relate them", "examples")


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
    description = "no signature and no cause-evidence pattern matches a line of the harmless corpus (logs_samples/harmless/)"

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
            if target is None or signature.kind == "fuzzy" or signature.against:
                continue  # fuzzy signatures are held to the harmless logs by healthy_logs, through the scanner
            hit = next(((path, number) for path, number, text in lines if confirm(signature, text)), None)
            if hit is not None:
                where = ("signatures",) if signature.cause is None else ("causes", _cause_index(target.entry, signature.cause))
                what = "signature" if signature.cause is None else f"cause '{signature.cause}' evidence"
                yield self.finding(target, f"{what} {signature.pattern!r} matches harmless line {hit[0]}:{hit[1]}", *where)


def _cause_index(entry: Entry, cause: str) -> int:
    return next(index for index, known in enumerate(entry.causes) if known.id == cause)


class ExclusionNamesValidator(Validator):
    name = "exclusions"
    description = "validation.exclude names existing checks"

    def validate(self, target: Target, ctx: Context) -> Iterator[Finding]:
        known = {validator.name for validator in VALIDATORS}
        for index, exclusion in enumerate(target.entry.validation.exclude):
            if exclusion.validator not in known or exclusion.validator in UNSKIPPABLE:
                message = f"cannot exclude '{exclusion.validator}' (excludable: {', '.join(sorted(known - UNSKIPPABLE))})"
                yield self.finding(target, message, "validation", "exclude", index, "validator")


VALIDATORS: tuple[type[Validator], ...] = (
    SchemaValidator,
    FileNameValidator,
    CategoryFolderValidator,
    KnownCategoryValidator,
    UniqueIdValidator,
    RegexSafetyValidator,
    HasExamplesValidator,
    ExamplesValidator,
    ReferencesValidator,
    PlaceholderValidator,
    DraftValidator,
    OverlapValidator,
    HealthyLogsValidator,
    HoneypotValidator,
    HarmlessLinesValidator,
    ExclusionNamesValidator,
)
# file_name too: the loader refuses such a file whatever the entry says, so skipping the check would
# let an entry validate that no scan ever loads.
STRICT_CHECKS = frozenset({PlaceholderValidator.name, DraftValidator.name})
"""Checks whose warnings are errors under --strict: unfinished entries do not ship."""
UNSKIPPABLE = frozenset({"schema", "unique_id", "exclusions", "file_name"}) | STRICT_CHECKS
"""Checks without which the KB cannot load, an exclusion could hide itself or a draft could ship."""


@dataclass
class Report:
    findings: list[Finding]
    entries: int
    notes: list[str]
    excluded: int = 0
    """Findings dropped by an entry's own `validation.exclude`."""

    @property
    def errors(self) -> int:
        return sum(1 for finding in self.findings if finding.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for finding in self.findings if finding.severity == "warning")

    def to_json(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "errors": self.errors,
            "warnings": self.warnings,
            "excluded": self.excluded,
            "notes": self.notes,
            "findings": [finding.to_json() for finding in self.findings],
        }


def collect_targets(paths: list[Path]) -> tuple[list[Target], list[Finding]]:
    """Load every entry file under `paths` (entry files or KB dirs); bad files become findings."""
    targets: list[Target] = []
    failures: list[Finding] = []
    for path in paths:
        if path.is_dir():
            files, root = entry_files(path), path.resolve()
        elif path.is_file():
            files, root = [path], path.resolve().parent.parent
        else:
            raise KBError(path, None, "no such entry file or KB directory")
        for file in files:
            try:
                targets.append(Target(load_entry(file), root))
            except KBError as exc:
                failures.append(Finding(SchemaValidator.name, "error", exc.path, exc.line, exc.message))
    return targets, failures


def build_context(targets: list[Target], context_dirs: list[Path], baselines: Baselines) -> Context:
    """The KB the targets will really run in: `context_dirs` merged, then the targets over them."""
    kb, _ = load_kb([d for d in context_dirs if d.is_dir()], strict=False)
    for target in targets:
        kb.entries[target.entry.id] = target.entry
        kb.sources[target.entry.id] = target.loaded
    return Context(targets=targets, kb=kb, baselines=baselines)


def run_validators(paths: list[Path], context_dirs: list[Path], baselines: Baselines, *, strict: bool = False) -> Report:
    targets, findings = collect_targets(paths)
    ctx = build_context(targets, context_dirs, baselines)
    validators = [validator_class() for validator_class in VALIDATORS]
    for validator in validators:
        for target in targets:
            findings += validator.validate(target, ctx)
        findings += validator.finalize(ctx)
    kept, excluded = _apply_exclusions(findings, targets)
    if strict:
        kept = [replace(f, severity="error") if f.validator in STRICT_CHECKS else f for f in kept]
    kept.sort(key=lambda f: (str(f.path), f.line or 0, f.validator))
    return Report(findings=kept, entries=len(targets), notes=list(baselines.notes), excluded=excluded)


def _apply_exclusions(findings: list[Finding], targets: list[Target]) -> tuple[list[Finding], int]:
    skipped = {
        (target.loaded.path, exclusion.validator)
        for target in targets
        for exclusion in target.entry.validation.exclude
        if exclusion.validator not in UNSKIPPABLE
    }
    kept = [finding for finding in findings if (finding.path, finding.validator) not in skipped]
    return kept, len(findings) - len(kept)


def _signatures(entry: Entry) -> Iterator[tuple[tuple[Any, ...], Signature]]:
    for index, signature in enumerate(entry.signatures):
        yield ("signatures", index), signature
    for cause_index, cause in enumerate(entry.causes):
        for index, signature in enumerate(cause.evidence):
            yield ("causes", cause_index, "evidence", index), signature


def _strings(value: Any, loc: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*loc, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*loc, index))
