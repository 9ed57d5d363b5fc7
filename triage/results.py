"""Result models: what a scan found, in the shape of the stable `--json` contract (version 1)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from triage.kb.models import CodeChange

JSON_VERSION = 1


class EvidenceLine(BaseModel):
    source: str
    line: int
    text: str
    rank: int | None = None
    timestamp: datetime | None = Field(None, description="When the line was written, where it says (UTC if it gave a zone).")


class CauseResult(BaseModel):
    id: str
    title: str
    probability: float
    how_to_tell: str = ""
    evidence: list[str] = Field(default_factory=list, description="What raised this cause: matched lines, extracted values, probes.")


class FixResult(BaseModel):
    title: str
    addresses: list[str] = Field(default_factory=list)
    description: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    code: CodeChange | None = None
    commands: list[str] = Field(default_factory=list)


class ReferenceResult(BaseModel):
    url: str | None = None
    document: str | None = None
    supports: str = ""


class Diagnosis(BaseModel):
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


class Stats(BaseModel):
    lines: int = 0
    bytes: int = 0
    seconds: float = 0.0
    candidate_lines: int = 0
    templates: int = 0
    prefilter: str = ""


class ScanResult(BaseModel):
    version: int = JSON_VERSION
    diagnoses: list[Diagnosis] = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)
    root_rank: int | None = None
    errors: list[str] = Field(default_factory=list, description="Input problems met while scanning (one line each).")
