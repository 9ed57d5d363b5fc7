"""`triage tui`: browse the ranked causes, their fixes and the log in a terminal UI."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from triage.cli.common import EXIT_OK, EXIT_USAGE, add_kb_options


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tui",
        help="browse causes, fixes and the log interactively",
        description="Open logs in a terminal UI: ranked causes with their evidence and fixes, the log with "
        "matched lines highlighted, live probes and a markdown report for issues. Press ? inside for every key.",
        epilog="'-' reads standard input into memory first; the UI then runs on the terminal (/dev/tty).",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="log files (plain, gzip, xz or bzip2); '-' reads standard input"
    )
    parser.add_argument("--follow", action="store_true", help="keep reading files as they grow, like tail -f")
    parser.add_argument("--redact", action="store_true", help="mask paths, host names and IPs in exported reports")
    parser.add_argument(
        "--report", type=Path, default=Path("triage-report.md"), metavar="FILE", help="where e writes the report"
    )
    add_kb_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    paths: list[str] = args.paths or (["-"] if not sys.stdin.isatty() else [])
    if not paths:
        print("triage: no input: give log files, or pipe a log into `triage tui -`", file=sys.stderr)
        return EXIT_USAGE
    stdin_data = None
    if "-" in paths:
        stdin_data = sys.stdin.buffer.read()
        if not _reattach_terminal():
            print("triage: stdin was read, but there is no terminal (/dev/tty) to run the UI on", file=sys.stderr)
            return EXIT_USAGE
    # Imported here so that `triage scan` never pays for textual.
    from triage.tui.app import TriageApp

    app = TriageApp(
        paths,
        kb_dirs=args.kb,
        include_shipped_kb=args.shipped_kb,
        follow=args.follow,
        stdin_data=stdin_data,
        redact=args.redact,
        report_path=args.report,
    )
    app.run()
    return EXIT_OK


def _reattach_terminal() -> bool:
    """Point fd 0 at the terminal: textual reads keys from stdin, which was the pipe."""
    if sys.stdin.isatty():
        return True
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    os.dup2(tty, 0)
    os.close(tty)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - replaces the closed pipe for the process lifetime
    return True
