"""Result models: what a scan found, in the shape of the stable `--json` contract (version 1).

Plain dataclasses rather than pydantic models: results are built by our own code, never parsed
from untrusted input, and pydantic's import and class set-up alone cost more than a whole scan of
a small log. `to_json` turns any result into JSON-ready data; `replace` makes changed copies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

JSON_VERSION = 1

T = TypeVar("T")


def replace(result: T, **changes: Any) -> T:
    """A copy of `result` with `changes`: results are treated as values, never edited in place."""
    return dataclasses.replace(result, **changes)  # type: ignore[type-var]


def to_json(value: Any) -> Any:
    """JSON-ready data (dicts, lists, str, numbers, None) from results, in field order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


@dataclass
class EvidenceLine:
    source: str
    line: int
    text: str
    rank: int | None = None
    timestamp: datetime | None = None
    supports: str | None = None
    """The cause id this line is evidence for; None for a line that matched the entry itself."""


@dataclass
class CauseResult:
    id: str
    title: str
    probability: float
    how_to_tell: str = ""
    evidence: list[str] = field(default_factory=list)
    """What raised this cause: matched lines, extracted values, probes."""


@dataclass
class CodeChange:
    before: str
    after: str
    language: str = "python"


@dataclass
class FixResult:
    title: str
    addresses: list[str] = field(default_factory=list)
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)
    code: CodeChange | None = None
    commands: list[str] = field(default_factory=list)
    kind: Literal["fix", "diagnostic"] = "fix"
    """`diagnostic`: a way to confirm the cause or learn more, shown after the fixes ("to confirm")."""
    confirmed_by: list[str] = field(default_factory=list)
    """Threads or documents where this fix was confirmed to work."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FixResult:
        code = data.get("code")
        return cls(**{**data, "code": CodeChange(**code) if code else None})


@dataclass
class ReferenceResult:
    url: str | None = None
    document: str | None = None
    supports: str = ""


@dataclass
class Diagnosis:
    id: str
    category: str
    title: str
    severity: str
    confidence: float
    score: float
    summary: str = ""
    generic: bool = False
    evidence: list[EvidenceLine] = field(default_factory=list)
    evidence_count: int = 0
    causes: list[CauseResult] = field(default_factory=list)
    fixes: list[FixResult] = field(default_factory=list)
    probes: list[str] = field(default_factory=list)
    extracted: dict[str, Any] = field(default_factory=dict)
    references: list[ReferenceResult] = field(default_factory=list)
    rank: int | None = None
    role: Literal["root", "cascade"] | None = None
    first_seen: int = 0
    """Order in which the first evidence line arrived (smaller is earlier)."""
    probe_notes: list[str] = field(default_factory=list)
    """What live probes changed in this diagnosis."""
    fix_notes: list[str] = field(default_factory=list)
    """Fixes left out, and why (e.g. the log shows them already applied)."""
    family: bool = False
    """Found by a family rule (a class of failures), not by an entry for this very message."""
    guess: bool = False
    """The safety net's guess for an error no entry knows: category from the nearest known failures."""
    resembles: list[str] = field(default_factory=list)
    """For a guess: ids of the KB entries whose examples are closest to the error."""
    status: str | None = None
    """The entry's status: a `draft` ranks below curated entries. None for a guess (no entry)."""
    related: list[str] = field(default_factory=list)
    """Ids of the KB entries the entry names as related."""

    @property
    def key(self) -> str:
        """Unique among a result's diagnoses, where `id` is not: the safety net's runners-up share one
        id, one per family. An entry's key is its id, whatever category its leading cause gives it."""
        return f"{self.id}:{self.category}" if self.guess else self.id


@dataclass
class Stats:
    lines: int = 0
    bytes: int = 0
    seconds: float = 0.0
    candidate_lines: int = 0
    templates: int = 0
    prefilter: str = ""


@dataclass
class ScanResult:
    version: int = JSON_VERSION
    diagnoses: list[Diagnosis] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    root_rank: int | None = None
    errors: list[str] = field(default_factory=list)
    """Input problems met while scanning (one line each)."""
    probes: list[dict[str, Any]] = field(default_factory=list)
    """Results of live probes run with --probe."""
    context: dict[str, Any] = field(default_factory=dict)
    """What was running, as the log shows it: launcher, workload(s), versions, SoC, env vars set."""
