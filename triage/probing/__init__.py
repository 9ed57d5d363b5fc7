"""Run the live probes (top-level ``probes`` package) in subprocesses and collect typed results.

The constants live here, not in `runner`, so that the CLI can show them without importing the
runner (and pydantic models) at start-up.
"""

PYTHON_ENV = "TRIAGE_PROBE_PYTHON"
DEFAULT_TIMEOUT = 60.0
