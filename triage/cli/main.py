"""`triage`: the command-line entry point.

Command modules keep heavy imports (rich, textual, torch) inside their `run` functions: `triage scan`
of a small log must start fast. For the same reason a command line that names its command imports
and registers that command's module only; the full parser (every module) is built for `--help`,
`--version` and anything it does not know.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from triage import __version__

COMMAND_MODULES: dict[str, str] = {
    "scan": "scan_cmd",
    "tail": "tail_cmd",
    "tui": "tui_cmd",
    "run": "run_cmd",
    "probe": "probe_cmd",
    "eval": "eval_cmd",
    "kb": "kb_cmd",
}
"""Each command by the module that registers it, in the order `triage --help` lists them."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command `only` alone."""
    parser = argparse.ArgumentParser(
        prog="triage",
        description="Triage PyTorch-on-Ascend (torch_npu, CANN, HCCL) failures: pipe a log in, "
        "get ranked causes with concrete fixes.",
        epilog="Examples:\n  triage scan train.log\n  kubectl logs job/x | triage scan\n  triage scan --json rank_*.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command, module in COMMAND_MODULES.items():
        if only in (None, command):
            importlib.import_module(f"triage.cli.{module}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    named = argv[0] if argv and argv[0] in COMMAND_MODULES else None
    parser = build_parser(only=named)
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
