"""Run the live probes (top-level ``probes`` package) in subprocesses and collect typed results."""
