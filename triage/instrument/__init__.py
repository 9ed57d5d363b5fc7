"""Instrumentation for `triage run`: a sitecustomize injected into the job, and its launcher."""
