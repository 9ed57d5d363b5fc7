"""`triage kb validate`: checks that a KB entry is well formed, safe and well behaved.

Each check is a small `Validator` in `VALIDATORS` (triage.kbtools.validators). Findings carry the
validator's name, a severity and file:line. An entry may skip a check only with a written reason, in
`validation.exclude`. `--strict` (what CI runs) also refuses unfinished entries: the warnings of
the checks in `STRICT_CHECKS` become errors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from triage.kb.loader import KBError, entry_files, load_entry, load_kb
from triage.kbtools.samples import Baselines
from triage.kbtools.validation import Context, Finding, Target
from triage.kbtools.validators import STRICT_CHECKS, UNSKIPPABLE, VALIDATORS, SchemaValidator


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
                # Unsafe regexes are this tool's regex_safety findings, every one of them, not a load error.
                targets.append(Target(load_entry(file, check_regexes=False), root))
            except KBError as exc:
                failures.append(Finding(SchemaValidator.name, "error", exc.path, exc.line, exc.message))
    return targets, failures


def build_context(targets: list[Target], context_dirs: list[Path], baselines: Baselines) -> Context:
    """The KB the targets will really run in: `context_dirs` merged, then the targets over them."""
    dirs = [d for d in context_dirs if d.is_dir()]
    kb, _ = load_kb(dirs, strict=False)
    for target in targets:
        # The targets are a directory of their own, after the others: their signatures keep their
        # numbers (an entry a target overrides stays in place, switched off), so their compiled
        # databases are reused and only the targets' are compiled.
        kb.add(target.loaded, len(dirs))
    return Context(targets=targets, kb=kb, baselines=baselines)


def run_validators(
    paths: list[Path], context_dirs: list[Path], baselines: Baselines, *, strict: bool = False
) -> Report:
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
