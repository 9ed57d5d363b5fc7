"""ascend-triage: ranked causes and concrete fixes for PyTorch-on-Ascend failures."""

__version__ = "0.1.0"
