"""`triage tail`: follow growing logs and report each failure the moment its evidence appears."""

from __future__ import annotations

import argparse
import signal
import time

from triage.cli.common import (
    EXIT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    add_kb_options,
    add_stall_option,
    failure_found,
    load_scan_kb,
    positive_float,
    warn,
)

SEVERITIES = ("critical", "error", "warning", "info")
"""Worst first, as `--exit-on` reads them."""
DEFAULT_INTERVAL = 0.05


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tail",
        help="follow logs and report failures as they happen",
        description="Follow log files like `tail -F` (through rotation and truncation; quoted globs also "
        "pick up files that appear later, e.g. one log per rank) and print each diagnosis as soon as "
        "its evidence appears, then an update whenever its rank, role or likely cause changes. "
        "Ctrl-C prints a summary.",
        epilog="Exit codes: 0 no failure found (warnings at most), 1 at least one failure diagnosed (or --exit-on met), "
        "2 usage error. "
        "Example: triage tail --exit-on error 'logs/rank_*.log' '~/ascend/log/debug/plog/*'",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH|GLOB", help="log files, or quoted glob patterns")
    parser.add_argument(
        "--json",
        action="store_true",
        help='print JSON lines, one per event: {"event": "diagnosis"|"update"|"summary", ...}',
    )
    parser.add_argument(
        "--from-start", action="store_true", help="replay the files from their start instead of their end"
    )
    parser.add_argument(
        "--exit-on",
        choices=SEVERITIES,
        metavar="SEVERITY",
        help="exit with code 1 as soon as a diagnosis this severe or worse appears (critical|error|warning|info)",
    )
    add_stall_option(parser, "a log that writes nothing")
    parser.add_argument(
        "--interval",
        type=positive_float,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help="poll interval (default 0.05)",
    )
    add_kb_options(parser)
    parser.set_defaults(func=run)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    from triage.cli.event_output import EventPrinter
    from triage.engine import Scanner
    from triage.events import Event
    from triage.follow import Follower
    from triage.live import LiveScan

    kb = load_scan_kb(args)
    if kb is None:
        return EXIT_USAGE
    printer = EventPrinter(as_json=args.json)
    worst = SEVERITIES.index(args.exit_on) if args.exit_on else -1
    reached = False

    def on_event(event: Event) -> None:
        nonlocal reached
        printer(event)
        if event.kind == "diagnosis" and event.diagnosis is not None:
            reached = reached or SEVERITIES.index(event.diagnosis.severity) <= worst

    live = LiveScan(Scanner(kb), on_event)
    # A job wrapper stops us with SIGTERM: give it the same summary as Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    follower = Follower(
        args.paths,
        live,
        from_start=args.from_start,
        notify=warn,
        quiet_after=args.stall_after or None,
        on_quiet=live.quiet,
    )
    try:
        # The flag is checked once per poll: a poll reads at most a few MiB per file.
        while True:
            follower.poll()
            if reached:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        pass
    follower.close()
    summary = live.summary()
    printer(summary)
    return EXIT_FOUND if summary.result is not None and failure_found(summary.result.diagnoses) else EXIT_OK
