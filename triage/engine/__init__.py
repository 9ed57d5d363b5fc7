"""The matching engine: bytes in, ranked diagnoses out. Never imports textual or torch."""

from triage.engine.scanner import Scanner
from triage.engine.setup import load_engine_kb

__all__ = ["Scanner", "load_engine_kb"]
