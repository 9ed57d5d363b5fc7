"""`triage scan`: read logs, print ranked causes with evidence and fixes."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from triage.sources import expand_directories
from triage.cli.common import (
    EXIT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    failure_found,
    add_kb_options,
    load_scan_kb,
    positive_float,
    positive_int,
    unit_float,
    warn,
)

if TYPE_CHECKING:
    from triage.cli.progress import ProgressReporter
    from triage.engine.scanner import Scanner
    from triage.results import ScanResult

PROBED_DIAGNOSES = 3
INTERRUPTED = "interrupted: results cover what was read so far"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "scan",
        help="scan logs and rank the likely causes",
        description="Scan log files (plain, gzip, xz or bzip2), or standard input, and print the likely causes, "
        "best first, with their evidence and fixes.",
        epilog="Exit codes: 0 no failure found (nothing, or warnings only; or --exit-zero), 1 at least one failure "
        "diagnosed (error or critical, any confidence; --min-confidence raises the bar), 2 usage or input error, "
        "or a --report that could not be written.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="log files or directories of them; '-' or nothing reads standard input"
    )
    parser.add_argument("--json", action="store_true", help="print the stable JSON contract (version 1)")
    parser.add_argument("--top", type=positive_int, default=None, metavar="N", help="show at most N diagnoses")
    parser.add_argument(
        "--min-confidence", type=unit_float, default=0.0, metavar="X", help="hide diagnoses below confidence X (0-1)"
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="human output: every diagnosis in full (summary, all causes, evidence, fixes)",
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 when failures are found (2 still means a usage or input error)",
    )
    parser.add_argument("--no-progress", action="store_true", help="never draw the progress line on stderr")
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker processes for big plain files, or many files that are big together (default: the cores; "
        "the same diagnoses as with 1, though other lines of a shape may be listed)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help=f"run the live probes of the top {PROBED_DIAGNOSES} diagnoses and re-rank by what they find",
    )
    parser.add_argument(
        "--report", metavar="FILE", help="also write a markdown report ready to paste into an issue (top 3 causes)"
    )
    parser.add_argument(
        "--redact",
        action="store_true",
        help="mask secrets, user names, paths, host names and IPs in every output (text, --json, --report)",
    )
    parser.add_argument(
        "--probe-python", metavar="PATH", help="Python with torch to run probes under (default: this one)"
    )
    parser.add_argument(
        "--probe-timeout", type=positive_float, default=60.0, metavar="S", help="seconds per probe (default 60)"
    )
    add_kb_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from triage.engine import Scanner
    from triage.engine.facts import ranked_result

    paths = args.paths or ["-"]
    if paths == ["-"] and sys.stdin.isatty():
        print("triage: no input: give log files, or pipe a log into `triage scan`", file=sys.stderr)
        return EXIT_USAGE
    kb = load_scan_kb(args)
    if kb is None:
        return EXIT_USAGE
    scanner = Scanner(kb)
    sources, errors = expand_directories(paths)
    inputs = len(sources) + len(errors)  # the files, and each directory with none in it
    if sources:
        errors += _scan(scanner, sources, args)
    result = ranked_result(scanner, top=args.top, min_confidence=args.min_confidence)
    if args.probe:
        result = _probe_and_rerank(result, python=args.probe_python, timeout=args.probe_timeout)
    environment: dict[str, str] = {}
    if args.redact or args.report:
        from triage.report import collect_environment

        environment = collect_environment()
    if args.redact:
        from triage.redact import redact_result
        from triage.report import redactor_for

        redactor = redactor_for(result, [*paths, *sources], environment)
        errors = [redactor(error) for error in errors]
        result = redact_result(result, redactor)
    for error in errors:
        warn(error)
    report_written = True
    if args.report:
        from triage.report import build_report

        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                handle.write(build_report(result, sources=paths, environment=environment, redacted=args.redact))
        except OSError as exc:
            print(f"triage: cannot write the report {args.report}: {exc.strerror or exc}", file=sys.stderr)
            report_written = False
    if not report_written:
        code = EXIT_USAGE  # a CI step that asked for the report must not pass without it, --exit-zero or not
    elif failure_found(result.diagnoses):
        code = EXIT_OK if args.exit_zero else EXIT_FOUND
    else:
        code = EXIT_USAGE if errors and len(errors) >= inputs else EXIT_OK
    try:
        _print_result(result, as_json=args.json, verbose=args.verbose)
    except BrokenPipeError:
        # `triage scan x | head` read what it wanted: the verdict still belongs in the exit code.
        from triage.cli.main import silence_stdout

        silence_stdout()
    return code


def _scan(scanner: Scanner, paths: list[str], args: argparse.Namespace) -> list[str]:
    """Feed every source to `scanner`, with a progress line on big inputs; the one-line input errors.

    Ctrl-C ends the reading, not the command: what was read so far is still ranked and printed.
    """
    from triage.parallel import default_jobs
    from triage.scanning import scan_sources

    progress = None if args.no_progress else _progress_reporter(paths)
    try:
        jobs = args.jobs or default_jobs()
        return scan_sources(scanner, paths, progress=progress.update if progress else None, jobs=jobs)
    except KeyboardInterrupt:
        scanner.note_error(INTERRUPTED)
        return [INTERRUPTED]
    finally:
        if progress:
            progress.close()


def _print_result(result: ScanResult, *, as_json: bool, verbose: bool) -> None:
    if as_json:
        from triage.results import to_json

        json.dump(to_json(result), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        from triage.cli.render import render_scan

        render_scan(result, verbose=verbose)
    sys.stdout.flush()  # inside the caller's BrokenPipeError guard, not at exit


def _probe_and_rerank(result: ScanResult, *, python: str | None, timeout: float) -> ScanResult:
    """Run the probes named by the top diagnoses (each once) and fold their findings into the ranking."""
    from triage.engine.probe_evidence import apply_probe_results
    from triage.probing.runner import run_probes

    names = list(dict.fromkeys(name for d in result.diagnoses[:PROBED_DIAGNOSES] for name in d.probes))
    if not names:
        return result
    print(f"triage: running probes: {', '.join(names)}", file=sys.stderr)
    probed = run_probes(names, python=python, timeout=timeout)
    for probe in probed:
        if probe.status in ("error", "skipped"):
            reason = probe.reason or (probe.findings[0].message if probe.findings else "")
            print(f"triage: probe {probe.probe}: {probe.status}: {reason}", file=sys.stderr)
    return apply_probe_results(result, [probe.model_dump(mode="json") for probe in probed])


def _progress_reporter(paths: list[str]) -> ProgressReporter | None:
    from triage.cli.progress import ProgressReporter

    return ProgressReporter.for_paths(paths)
