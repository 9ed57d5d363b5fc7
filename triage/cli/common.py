"""What every command shares: exit codes, the KB options, loading the KB with its warnings, argument types.

Kept light (argparse and sys at import): every command module imports it at start-up.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.engine.compiled import CompiledKB
    from triage.kb.loader import KnowledgeBase
    from triage.results import Diagnosis

EXIT_OK = 0
"""No failure found (warnings at most), every check passed."""
EXIT_FOUND = 1
"""At least one failure diagnosed, finding or failed check."""
EXIT_USAGE = 2
"""A usage or input error (or a probe that could not run), said in one line on stderr."""


def failure_found(diagnoses: list[Diagnosis]) -> bool:
    """Whether a scan found what a job wrapper or CI step exits 1 on: a diagnosis of error or critical
    severity. Warnings alone (a CPU fallback, a stall guessed at) say a healthy run may be slow, not
    that it failed: on the test split's healthy logs 4 of 68 exit 1 this way, 10 with them, and every
    failure log that exits 1 with them does without."""
    from triage.engine.correlate import FAILURE_SEVERITIES  # the engine loads only for commands that scan

    return any(diagnosis.severity in FAILURE_SEVERITIES for diagnosis in diagnoses)


def warn(message: str) -> None:
    """One line for the user on stderr, flushed: a live command's reader is waiting."""
    print(f"triage: {message}", file=sys.stderr, flush=True)


def add_kb_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kb",
        action="append",
        default=[],
        metavar="DIR",
        help="extra KB directory merged over the shipped KB (repeatable; the same id overrides). "
        "TRIAGE_KB_PATH adds more.",
    )
    parser.add_argument(
        "--no-shipped-kb",
        dest="shipped_kb",
        action="store_false",
        help="use only the KB directories given with --kb and TRIAGE_KB_PATH",
    )


def load_scan_kb(args: argparse.Namespace, extra_dirs: list[str] | None = None) -> CompiledKB | None:
    """The compiled KB of `--kb`/`--no-shipped-kb` (plus `extra_dirs`); None, said on stderr, when it is empty."""
    from triage.engine.setup import load_reported_kb

    kb = load_reported_kb(
        [*args.kb, *(extra_dirs or [])], include_shipped=args.shipped_kb, warn=warn, building=_say_building
    )
    return kb if kb.entries else None


def _say_building() -> None:
    # To a person only (scripts read stdout and the exit code): a cold build takes seconds, not a blink.
    if sys.stderr.isatty():
        print("triage: compiling the knowledge base (once per install or KB edit) ...", file=sys.stderr, flush=True)


def load_kb_entries(args: argparse.Namespace, extra_dirs: list[str] | None = None) -> tuple[KnowledgeBase, int]:
    """The entries themselves (with their files), for the KB tools, and how many were skipped (said on stderr)."""
    from triage.kb.loader import load_kb, report_skipped
    from triage.kb.paths import kb_dirs

    kb, errors = load_kb(kb_dirs([*args.kb, *(extra_dirs or [])], include_shipped=args.shipped_kb), strict=False)
    report_skipped(errors, warn)
    return kb, len(errors)


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def positive_float(value: str) -> float:
    number = float(value)
    if not (number > 0 and math.isfinite(number)):  # nan passes a `<= 0` test
        raise argparse.ArgumentTypeError("must be a number above 0")
    return number


def add_stall_option(parser: argparse.ArgumentParser, quiet: str) -> None:
    """`--stall-after` of the faces that watch output as it comes (`tail`, `run`): `quiet` says what
    goes quiet ("a log that writes nothing")."""
    from triage.follow import QUIET_AFTER

    parser.add_argument(
        "--stall-after",
        type=non_negative_float,
        default=QUIET_AFTER,
        metavar="SECONDS",
        help=f"{quiet} for this long is taken to have stopped where it ends: a banner it ends on (a graph "
        "capture, a compile, HCCL init, a torch_extensions lock) is reported as a stall "
        f"(default {QUIET_AFTER:g}; 0: never)",
    )


def non_negative_float(value: str) -> float:
    number = float(value)
    if not (number >= 0 and math.isfinite(number)):
        raise argparse.ArgumentTypeError("must be a number, 0 or above")
    return number


def unit_float(value: str) -> float:
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return number
