"""`triage`: the command-line entry point.

Command modules are imported at start-up to build the parser, so they keep heavy imports (rich,
textual, torch) inside their `run` functions: `triage scan` of a small log must start fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from triage import __version__

COMMAND_MODULES: tuple[str, ...] = ("scan_cmd", "tail_cmd", "tui_cmd", "run_cmd", "probe_cmd", "eval_cmd", "kb_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="triage",
        description="Triage PyTorch-on-Ascend (torch_npu, CANN, HCCL) failures: pipe a log in, "
        "get ranked causes with concrete fixes.",
        epilog="Examples:\n  triage scan train.log\n  kubectl logs job/x | triage scan\n  triage scan --json rank_*.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"triage.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("triage: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`triage scan x | head`): not an error worth a traceback.
        silence_stdout()
        return 0


def silence_stdout() -> None:
    """Point stdout at /dev/null after its reader left, so that the flush at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
