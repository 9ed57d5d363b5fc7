"""Typed form of the probe JSON contract (see probes/README.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["ok", "finding", "skipped", "error"]
DeviceType = Literal["npu", "cuda", "cpu"]


class ProbeDevice(BaseModel):
    type: DeviceType
    name: str
    count: int


class ProbeFinding(BaseModel):
    id: str
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    confirms: list[str] = Field(default_factory=list)
    rules_out: list[str] = Field(default_factory=list)


class ProbeResult(BaseModel):
    probe: str
    version: str
    device: ProbeDevice
    status: Status
    findings: list[ProbeFinding] = Field(default_factory=list)
    seconds: float
    # Why a probe was skipped or failed, in one line.
    reason: str | None = None
    # Last lines of the probe's stderr; kept for error results so the cause can be read later.
    stderr_tail: str = ""

    @property
    def confirmed_causes(self) -> list[str]:
        return sorted({c for f in self.findings for c in f.confirms})

    @property
    def ruled_out_causes(self) -> list[str]:
        return sorted({c for f in self.findings for c in f.rules_out})
