"""`triage eval`: accuracy of the KB on a labelled directory of logs."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from triage.cli.common import EXIT_OK, EXIT_USAGE, add_kb_options, load_scan_kb


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="measure accuracy on labelled logs",
        description="Scan every log of a labelled directory (labels.yaml, or cases.yaml with category and "
        "log_file) and print top-1/top-3 category accuracy, the share of failure logs with no diagnosis, how many "
        "failures specific entries, family rules and the safety net's guesses named (and named rightly), false "
        "alarms on healthy logs, and, where threads confirm a fix, how often the top cause and the first two "
        "fixes are the thread's. A corpus with a train/test split is reported per split: quote the test figures.",
    )
    parser.add_argument("directory", nargs="?", default="logs_samples", metavar="DIR", help="default: logs_samples")
    parser.add_argument("--split", metavar="NAME", help="only the cases of this split (train or test)")
    parser.add_argument(
        "--bury",
        action="store_true",
        help="scan each failure log between two of the directory's healthy logs, as one stream",
    )
    parser.add_argument(
        "--leave-thread-out",
        action="store_true",
        help="scan each case with the KB entries that cite its thread switched off: a figure on the train "
        "split for logs the entries were not written from, without reading the test split",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--misses", action="store_true", help="list the cases whose top-1 category is wrong")
    parser.add_argument("--by-repo", action="store_true", help="also print figures per repository")
    parser.add_argument("--entries", action="store_true", help="also print precision and recall per entry")
    add_kb_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from triage.kbtools.cases import LabelError, load_cases
    from triage.kbtools.evaluate import evaluate

    try:
        cases = load_cases(Path(args.directory))
    except LabelError as exc:
        print(f"triage: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # A failure log is buried between any two of the directory's healthy logs, whatever the split: a
    # healthy log tells nothing about the failures, and the pool (and so each case's pair) stays the same.
    bury_in = [case.file for case in cases if case.healthy] if args.bury else None
    if args.split:
        cases = [case for case in cases if case.split == args.split]
        if not cases:
            print(f"triage: no case of split '{args.split}' in {args.directory}", file=sys.stderr)
            return EXIT_USAGE
    kb = load_scan_kb(args)
    if kb is None:
        return EXIT_USAGE
    if args.bury and not bury_in:
        print(f"triage: --bury needs healthy logs in {args.directory}", file=sys.stderr)
        return EXIT_USAGE
    report = evaluate(kb, cases, bury_in=bury_in, leave_thread_out=args.leave_thread_out)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(report, args)
    for error in report.errors:
        print(f"triage: {error}", file=sys.stderr)
    return EXIT_USAGE if report.errors else EXIT_OK


def _print_report(report: Any, args: argparse.Namespace) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    for split in report.splits() or [None]:
        label = f"{split} split" if split else "all cases"
        console.print(_category_table(report, split, label))
        summary = report.summary(split)
        console.print(_layer_line(report, split))
        console.print(_interval_line(summary))
        console.print(f"False alarms on healthy logs: {summary['false_alarms']} of {summary['healthy_logs']}")
        console.print(
            f"Keyword baseline on the same logs (one regex per category): top-1 {summary['keyword_top1']:.1%}, "
            f"no diagnosis {summary['keyword_no_diagnosis']:.1%}, "
            f"false alarms {summary['keyword_false_alarms']} of {summary['healthy_logs']}"
        )
        if summary["confirmed_fix_cases"]:
            console.print(
                f"Cases with a confirmed fix: {summary['confirmed_fix_cases']}; top cause is the thread's: "
                f"{summary['top_cause_right']:.0%}; thread's fix among the first two: {summary['fix_in_first_two']:.0%}"
            )
        if args.by_repo:
            console.print(_repo_table(report, split, label))
    if args.entries:
        console.print(_entry_table(report))
    if args.misses:
        for outcome in report.outcomes:
            wrong = outcome.false_alarm if outcome.case.healthy else not outcome.top1
            if wrong:
                got = ", ".join(f"{i} ({c}, {conf:.2f})" for i, c, conf in outcome.predicted[:3]) or "nothing"
                where = f" ({outcome.case.split})" if outcome.case.split else ""
                console.print(f"miss{where}: {outcome.case.file.name} [{outcome.case.category or 'healthy'}] -> {got}")


def _table(title: str, columns: tuple[str, ...]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for number, column in enumerate(columns):
        table.add_column(column, justify="left" if number == 0 else "right")
    return table


def _category_table(report: Any, split: str | None, label: str) -> Any:
    table = _table(f"Accuracy by category ({label})", ("category", "cases", "top-1", "top-3", "no diagnosis"))
    for category, row in report.by_category(split).items():
        table.add_row(
            category, str(row["cases"]), f"{row['top1']:.0%}", f"{row['top3']:.0%}", f"{row['no_diagnosis']:.0%}"
        )
    summary = report.summary(split)
    cells = (f"{summary['top1']:.1%}", f"{summary['top3']:.1%}", f"{summary['no_diagnosis']:.1%}")
    table.add_row("all", str(summary["cases"]), *cells, style="bold")
    return table


_LAYERS = (("entry", "specific entries"), ("family", "family rules"), ("guess", "the safety net's guesses"))


def _layer_line(report: Any, split: str | None) -> str:
    """How many failures each layer named, and how many of those rightly: where accuracy is lost."""
    failing = [outcome for outcome in report.select(split) if not outcome.case.healthy]
    named = Counter(outcome.layer for outcome in failing)
    right = Counter(outcome.layer for outcome in failing if outcome.top1)
    counts = [f"{name} {right[layer]} of {named[layer]}" for layer, name in _LAYERS if named[layer]]
    return f"Named rightly by {', '.join(counts)}; {named['none']} named by nothing"


def _interval_line(summary: dict[str, Any]) -> str:
    """Where the rates of logs like these lie (95%): a change inside the interval may be chance."""
    shown = [("top-1", "top1"), ("top-3", "top3"), ("no diagnosis", "no_diagnosis")]
    if summary["confirmed_fix_cases"]:
        shown += [("top cause", "top_cause_right"), ("fix in the first two", "fix_in_first_two")]
    parts = [f"{label} {low:.0%}-{high:.0%}" for label, key in shown for low, high in [summary["intervals"][key]]]
    return f"95% intervals (Wilson) of these rates on logs like these: {', '.join(parts)}"


def _repo_table(report: Any, split: str | None, label: str) -> Any:
    table = _table(f"By repository ({label})", ("repository", "failures", "top-1", "healthy", "false alarms"))
    for repo, row in report.grouped("repo", split).items():
        top1 = f"{row['top1']:.0%}" if row["cases"] else "-"
        table.add_row(repo, str(row["cases"]), top1, str(row["healthy_logs"]), str(row["false_alarms"]))
    return table


def _entry_table(report: Any) -> Any:
    table = _table("Per entry (as top diagnosis)", ("entry", "predicted", "precision", "expected", "recall"))
    for entry_id, row in report.per_entry().items():
        precision = f"{row['precision']:.0%}" if row["predicted"] else "-"
        recall = f"{row['recall']:.0%}" if "recall" in row else "-"
        table.add_row(entry_id, str(row["predicted"]), precision, str(row.get("expected", "-")), recall)
    return table
