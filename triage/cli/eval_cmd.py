"""`triage eval`: accuracy of the KB on a labelled directory of logs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from triage.cli.scan_cmd import add_kb_option


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="measure accuracy on labelled logs",
        description="Scan every log of a labelled directory (labels.yaml, or cases.yaml with category and "
        "log_file) and print top-1/top-3 category accuracy, false alarms on healthy logs and per-entry "
        "precision/recall.",
    )
    parser.add_argument("directory", nargs="?", default="logs_samples", metavar="DIR", help="default: logs_samples")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--misses", action="store_true", help="list the cases whose top-1 category is wrong")
    add_kb_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from triage.engine import load_engine_kb
    from triage.evaluate import LabelError, evaluate, load_cases

    try:
        cases = load_cases(Path(args.directory))
    except LabelError as exc:
        print(f"triage: {exc}", file=sys.stderr)
        return 2
    kb, kb_errors = load_engine_kb(args.kb, include_shipped=args.shipped_kb)
    for error in kb_errors:
        print(f"triage: warning: skipped KB entry: {error}", file=sys.stderr)
    report = evaluate(kb, cases)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(report, show_misses=args.misses)
    for error in report.errors:
        print(f"triage: {error}", file=sys.stderr)
    return 2 if report.errors else 0


def _print_report(report, *, show_misses: bool) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    summary = report.summary()
    table = Table(title="Accuracy by category", title_justify="left")
    for column in ("category", "cases", "top-1", "top-3"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, row in report.by_category().items():
        table.add_row(category, str(row["cases"]), f"{row['top1']:.0%}", f"{row['top3']:.0%}")
    table.add_row("all", str(summary["cases"]), f"{summary['top1']:.1%}", f"{summary['top3']:.1%}", style="bold")
    console.print(table)
    console.print(f"False alarms on healthy logs: {summary['false_alarms']} of {summary['healthy_logs']}")
    entries = Table(title="Per entry (as top diagnosis)", title_justify="left")
    for column in ("entry", "predicted", "precision", "expected", "recall"):
        entries.add_column(column, justify="left" if column == "entry" else "right")
    for entry_id, row in report.per_entry().items():
        entries.add_row(
            entry_id,
            str(row["predicted"]),
            f"{row['precision']:.0%}" if row["predicted"] else "-",
            str(row.get("expected", "-")),
            f"{row['recall']:.0%}" if "recall" in row else "-",
        )
    console.print(entries)
    if show_misses:
        for outcome in report.outcomes:
            wrong = outcome.false_alarm if outcome.case.healthy else not outcome.top1
            if wrong:
                got = ", ".join(f"{i} ({c}, {conf:.2f})" for i, c, conf in outcome.predicted[:3]) or "nothing"
                console.print(f"miss: {outcome.case.file.name} [{outcome.case.category}] -> {got}")
