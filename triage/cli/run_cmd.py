"""`triage run -- CMD ARGS`: run a job with light instrumentation and triage its output as it streams."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from triage.cli.common import EXIT_USAGE, add_kb_options, add_stall_option, load_scan_kb
from triage.instrument.job import DEFAULT_GRACE_SECONDS

SOURCE = "<job>"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a job instrumented, triaging its output live",
        description="Run CMD with a sitecustomize on PYTHONPATH that counts init_process_group calls and records "
        "the allocator config into a sidecar JSON, stream the job's merged stdout and stderr through the "
        "scanner (diagnoses appear as they happen), then print a summary re-ranked by the record. The job runs "
        "in its own process group: Ctrl-C, SIGTERM and SIGHUP sent to triage are forwarded to all of it.",
        epilog="Exits with the job's exit code (2 if it cannot be started). "
        "Example: triage run --json -- torchrun --nproc-per-node 8 train.py",
    )
    parser.add_argument(
        "--json", action="store_true", help="JSON lines: one object per event, with the record's fields"
    )
    parser.add_argument(
        "--record", type=Path, metavar="PATH", help="where the job's record goes (default: a temp file)"
    )
    add_stall_option(parser, "a job that prints nothing")
    parser.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE_SECONDS,
        metavar="S",
        help="after forwarding Ctrl-C or SIGTERM to the job, SIGKILL its process group if it is still there "
        f"S seconds later (default {DEFAULT_GRACE_SECONDS:g})",
    )
    add_kb_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the job to run")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from triage.cli.event_output import EventPrinter
    from triage.engine import Scanner
    from triage.engine.facts import ranked_result
    from triage.engine.probe_evidence import apply_probe_results
    from triage.events import Event, summary_event
    from triage.instrument.job import Job
    from triage.instrument.launch import launch
    from triage.instrument.record import clear_record, read_record, record_as_probe_result
    from triage.live import LiveScan, stream_lines

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("triage: no command: use `triage run -- CMD ARGS`", file=sys.stderr)
        return EXIT_USAGE
    kb = load_scan_kb(args)
    if kb is None:
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="triage-run-") as scratch:
        record_path = args.record or Path(scratch) / "record.json"
        clear_record(record_path)  # a reused --record must not speak for this run
        printer = EventPrinter(as_json=args.json, extra=lambda: read_record(record_path))
        # With --json stdout carries events only, so the job's own output goes to stderr.
        echo = sys.stderr.buffer if args.json else sys.stdout.buffer
        live = LiveScan(Scanner(kb), printer)
        live.scanner.context.observe_job(command, os.environ)
        # Whatever stops the stream (the job's end, a forwarded signal, a closed stdout), leaving
        # the block stops what is left of the job's group.
        with Job(grace=args.grace, quiet_after=args.stall_after or None, on_quiet=lambda: live.quiet(SOURCE)) as job:
            try:
                job.start(launch(command, record_path))
            except OSError as exc:
                print(f"triage: cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
                return EXIT_USAGE
            stream_lines(job, live, SOURCE, echo=echo)
        code = job.stop()
        record = read_record(record_path)
        result = ranked_result(live.scanner)
        if record:
            result = apply_probe_results(result, [record_as_probe_result(record)])
        summary: Event = summary_event(result)
        printer(summary)
        if not args.json and record:
            print(f"triage: job record: init_process_group calls: {record.get('init_process_group_calls', 0)}")
    return code if code >= 0 else 128 - code
