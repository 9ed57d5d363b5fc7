"""Labelled cases: what `labels.yaml` (our samples) and `cases.yaml` (the real corpus) say of each
log, and which thread a case or a confirmed fix comes from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from triage.kb.loader import safe_yaml, yaml_problem


class LabelError(Exception):
    """The labels file is missing or malformed; str() is one line."""


@dataclass(frozen=True)
class Case:
    file: Path
    category: str | None
    top: str | None = None
    healthy: bool = False
    honeypot: bool = False
    id: str = ""
    repo: str | None = None
    split: str | None = None
    cause_terms: tuple[str, ...] = ()
    fix_terms: tuple[str, ...] = ()
    source: str | None = None
    """The thread the case was taken from."""

    @property
    def has_confirmed_fix(self) -> bool:
        return bool(self.fix_terms) and not self.healthy


def load_cases(directory: Path) -> list[Case]:
    for name in ("labels.yaml", "cases.yaml"):
        path = directory / name
        if path.is_file():
            break
    else:
        raise LabelError(f"{directory}: no labels.yaml or cases.yaml")
    try:
        rows = safe_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LabelError(f"{path}: cannot read labels: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise LabelError(f"{path}: cannot read labels: {yaml_problem(exc)}") from None
    if not isinstance(rows, list):
        raise LabelError(f"{path}: expected a list of cases")
    logs = directory / "logs" if (directory / "logs").is_dir() else directory
    cases = []
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not (row.get("file") or row.get("log_file")):
            raise LabelError(f"{path}: case {number} has no file/log_file")
        wrong = [f"{key} is not text" for key in _TEXT_FIELDS if not isinstance(row.get(key, ""), (str, type(None)))]
        wrong += [f"{key} is not a list of text" for key in _TERM_FIELDS if not _texts(row.get(key) or [])]
        if wrong:
            raise LabelError(f"{path}: case {number}: {', '.join(wrong)}")
        healthy = bool(row.get("healthy", False)) or row.get("category") == "healthy"
        cases.append(
            Case(
                file=logs / str(row.get("file") or row.get("log_file")),
                category=None if healthy else row.get("category"),
                top=row.get("top"),
                healthy=healthy,
                honeypot=bool(row.get("honeypot", False)),
                id=str(row.get("id") or ""),
                repo=row.get("repo"),
                split=row.get("split"),
                cause_terms=tuple(row.get("cause_terms") or ()),
                fix_terms=tuple(row.get("fix_terms") or ()) if row.get("fix_confirmed", True) else (),
                source=row.get("source"),
            )
        )
    return cases


_TEXT_FIELDS = ("file", "log_file", "category", "top", "repo", "split", "source")
_TERM_FIELDS = ("cause_terms", "fix_terms")


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


_GITHUB_THREAD = re.compile(r"https?://github\.com/([^/]+)/([^/]+)/(issues|pull)/(\d+)")


def thread_key(url: str) -> str:
    """A thread's URL as cases and `confirmed_by` are compared: no trailing slash, any case, and a
    GitHub owner and repository without '-', '_' or '.', so that a renamed repository keeps its
    threads (hiyouga/LLaMA-Factory is hiyouga/LlamaFactory now)."""
    key = url.strip().rstrip("/").lower()
    found = _GITHUB_THREAD.fullmatch(key)
    if found is None:
        return key
    owner, repo, kind, number = (re.sub(r"[-_.]", "", part) for part in found.groups())
    return f"github.com/{owner}/{repo}/{kind}/{number}"


def confirmed_cases(directory: Path) -> dict[str, Case]:
    """The corpus cases whose thread confirms a fix, by thread (empty where there is no corpus)."""
    try:
        cases = load_cases(directory)
    except LabelError:
        return {}
    return {thread_key(case.source): case for case in cases if case.source and case.fix_terms}
