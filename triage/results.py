"""Result models: what a scan found, in the shape of the stable `--json` contract (version 1)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JSON_VERSION = 1


class _Result(BaseModel):
    # Build validators on first use: a scan that finds nothing never pays for them.
    model_config = ConfigDict(defer_build=True)


class EvidenceLine(_Result):
    source: str
    line: int
    text: str
    rank: int | None = None
    supports: str | None = Field(
        None, description="The cause id this line is evidence for; null for a line that matched the entry itself."
    )
    timestamp: datetime | None = Field(None, description="When the line was written, where it says (UTC if it gave a zone).")


class CauseResult(_Result):
    id: str
    title: str
    probability: float
    how_to_tell: str = ""
    evidence: list[str] = Field(default_factory=list, description="What raised this cause: matched lines, extracted values, probes.")


class CodeChange(_Result):
    before: str
    after: str
    language: str = "python"


class FixResult(_Result):
    title: str
    addresses: list[str] = Field(default_factory=list)
    description: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    code: CodeChange | None = None
    commands: list[str] = Field(default_factory=list)


class ReferenceResult(_Result):
    url: str | None = None
    document: str | None = None
    supports: str = ""


class Diagnosis(_Result):
    id: str
    category: str
    title: str
    severity: str
    confidence: float
    score: float
    summary: str = ""
    generic: bool = False
    evidence: list[EvidenceLine] = Field(default_factory=list)
    evidence_count: int = 0
    causes: list[CauseResult] = Field(default_factory=list)
    fixes: list[FixResult] = Field(default_factory=list)
    probes: list[str] = Field(default_factory=list)
    extracted: dict[str, Any] = Field(default_factory=dict)
    references: list[ReferenceResult] = Field(default_factory=list)
    rank: int | None = None
    role: Literal["root", "cascade"] | None = None
    first_seen: int = Field(0, description="Order in which the first evidence line arrived (smaller is earlier).")
    probe_notes: list[str] = Field(default_factory=list, description="What live probes changed in this diagnosis.")


class Stats(_Result):
    lines: int = 0
    bytes: int = 0
    seconds: float = 0.0
    candidate_lines: int = 0
    templates: int = 0
    prefilter: str = ""


class ScanResult(_Result):
    version: int = JSON_VERSION
    diagnoses: list[Diagnosis] = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)
    root_rank: int | None = None
    errors: list[str] = Field(default_factory=list, description="Input problems met while scanning (one line each).")
    probes: list[dict[str, Any]] = Field(default_factory=list, description="Results of live probes run with --probe.")
