"""`triage kb`: tooling for KB contributors: list, show, new, validate, test, stats, import."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from triage.cli.common import EXIT_FOUND, EXIT_OK, EXIT_USAGE, add_kb_options, load_kb_entries, load_scan_kb, warn
from triage.render.words import plural

LOCAL_KB_DIR = Path("kb-local")
"""Where new and imported entries go without --out or TRIAGE_KB_PATH: never the installed package."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "kb",
        help="list, show, create, validate and test knowledge-base entries",
        description="Tools for the knowledge base: the shipped KB merged with --kb dirs and TRIAGE_KB_PATH.",
        epilog="Add an entry: triage kb new --from x.log; triage kb validate kb-local; triage kb test kb-local; "
        "triage scan --kb kb-local x.log",
    )
    commands = parser.add_subparsers(dest="kb_command", metavar="SUBCOMMAND", required=True)
    _register_browsing(commands)
    _register_authoring(commands)
    _register_converting(commands)


def _register_browsing(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    listing = commands.add_parser("list", help="list entries")
    listing.add_argument("--category", metavar="C", help="only entries of category C")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    add_kb_options(listing)
    listing.set_defaults(func=run_list)

    show = commands.add_parser("show", help="show one entry")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true", help="print the entry as JSON")
    add_kb_options(show)
    show.set_defaults(func=run_show)

    stats = commands.add_parser("stats", help="counts by category, status, signature kind, examples")
    stats.add_argument("--json", action="store_true")
    add_kb_options(stats)
    stats.set_defaults(func=run_stats)


def _register_authoring(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    new = commands.add_parser(
        "new",
        help="draft a new entry from a log",
        description="Draft an entry from a log: signatures from its most distinctive error line, a suggested "
        "category, the line as match example, a healthy line as no_match example, TODOs for the rest.",
    )
    new.add_argument("--from", dest="log", metavar="LOG", help="the log to learn from (default: standard input)")
    new.add_argument("--lines", metavar="A-B", help="only use lines A to B of the log (1-based)")
    new.add_argument(
        "--out", metavar="DIR", help=f"KB dir to write into (default: first TRIAGE_KB_PATH dir, else ./{LOCAL_KB_DIR})"
    )
    new.add_argument("--id", dest="entry_id", metavar="ID", help="entry id (default: derived from the error line)")
    new.add_argument(
        "--category", metavar="C", help="category (default: that of the known entries matching the line, else other)"
    )
    new.add_argument("--title", help="title (default: the error line)")
    new.add_argument("--force", action="store_true", help="replace an existing file")
    add_kb_options(new)
    new.set_defaults(func=run_new)

    validate = commands.add_parser(
        "validate",
        help="check entries: schema, ids, regex safety, examples, baselines",
        description="Run every check (see --list) on entry files or KB dirs. Exit 1 on any error finding.",
    )
    validate.add_argument(
        "paths", nargs="*", metavar="PATH", help="entry files or KB dirs (default: shipped KB and user dirs)"
    )
    validate.add_argument("--json", action="store_true", help="print findings as JSON")
    validate.add_argument(
        "--samples", metavar="DIR", help="logs_samples dir with labels.yaml (default: the samples shipped with triage)"
    )
    validate.add_argument("--list", dest="list_validators", action="store_true", help="list the checks and exit")
    validate.add_argument(
        "--strict", action="store_true", help="also refuse unfinished entries: drafts and TODOs left are errors (CI)"
    )
    add_kb_options(validate)
    validate.set_defaults(func=run_validate)

    test = commands.add_parser("test", help="run the examples of the entries given (default: every entry)")
    test.add_argument("targets", nargs="*", metavar="DIR|ID", help="KB dirs (run over the shipped KB) or entry ids")
    add_kb_options(test)
    test.set_defaults(func=run_test)


def _register_converting(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    migrate = commands.add_parser(
        "migrate",
        help="rewrite entries written in an old schema form to the current one",
        description="Rewrite, in place, the entries under each DIR that use an old form (today: `extract_kind` "
        "beside `extract`; now each extracted value is written once, its kind beside its name). Other lines, "
        "comments and quoting stay; entries already current are not touched, so running it twice changes nothing.",
    )
    migrate.add_argument("dirs", nargs="+", metavar="DIR", help="KB dirs to rewrite")
    migrate.add_argument("--check", action="store_true", help="write nothing; exit 1 if an entry needs rewriting")
    migrate.set_defaults(func=run_migrate)

    importer = commands.add_parser(
        "import-ascend-fd",
        help="convert MindCluster ascend-fd's kg-config.json into KB entries",
        description="Convert the fault knowledge of your own MindCluster ascend-fd installation "
        "(ascend_fd/configuration/kg-config.json) into experimental entries in a user KB dir.",
    )
    importer.add_argument("config", metavar="PATH", help="kg-config.json from your ascend-fd installation")
    importer.add_argument("--out", metavar="DIR", help="user KB dir to write into (default: first TRIAGE_KB_PATH dir)")
    importer.add_argument("--lang", choices=("en", "zh"), default="en", help="language of titles and fixes")
    importer.add_argument("--force", action="store_true", help="replace existing files")
    importer.set_defaults(func=run_import)


def run_list(args: argparse.Namespace) -> int:
    kb, _ = load_kb_entries(args)
    known = sorted({e.category for e in kb.entries.values()})
    if args.category is not None and args.category not in known:
        print(f"triage: no entry of category {args.category!r} (categories: {', '.join(known)})", file=sys.stderr)
        return EXIT_USAGE
    entries = sorted(
        (e for e in kb.entries.values() if args.category in (None, e.category)), key=lambda e: (e.category, e.id)
    )
    rows = [
        {"id": e.id, "category": e.category, "title": e.title, "severity": e.severity, "status": e.status}
        for e in entries
    ]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return EXIT_OK
    for row in rows:
        print(f"{row['id']:<44} {row['category']:<22} {row['status']:<12} {row['title']}")
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    kb, _ = load_kb_entries(args)
    entry = kb.get(args.id)
    if entry is None:
        print(f"triage: no KB entry with id '{args.id}' (see `triage kb list`)", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(entry.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, indent=2))
        return EXIT_OK
    from triage.cli.kb_render import render_entry
    from triage.kbtools.cases import confirmed_cases
    from triage.kbtools.samples import default_samples_dir

    print(render_entry(entry, kb.sources[entry.id].path, confirmed_cases(default_samples_dir() / "real")))
    return EXIT_OK


def run_new(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from triage.engine.setup import load_reported_kb
    from triage.kbtools.scaffold import ScaffoldError, draft_entry, parse_range, read_log
    from triage.kbtools.writer import write_entry

    if args.log is None and sys.stdin.isatty():
        print("triage: no log: give --from LOG, or pipe a log into `triage kb new`", file=sys.stderr)
        return EXIT_USAGE
    try:
        line_range = parse_range(args.lines) if args.lines else None
        lines = read_log(Path(args.log) if args.log else None, sys.stdin, line_range)
        # An empty KB is said but still drafts: the category is then `other`, for the user to pick.
        kb = load_reported_kb(args.kb, include_shipped=args.shipped_kb, warn=warn)
        draft = draft_entry(lines, kb, entry_id=args.entry_id, category=args.category, title=args.title)
    except ScaffoldError as exc:
        print(f"triage: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.log is not None and sys.stdin.isatty():
        _ask(draft.data, "id", "Entry id")
        _ask(draft.data, "category", f"Category ({draft.category_reason})")
        _ask(draft.data, "title", "Title")
    out = _target_dir(args.out, allow_local=True)
    try:
        path = write_entry(out, draft.data, force=args.force)
    except ValidationError as exc:
        first = exc.errors()[0]
        print(f"triage: invalid entry: {'.'.join(map(str, first['loc']))}: {first['msg']}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"triage: cannot write the entry: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {path}")
    print(f"  from line: {draft.key_line[:120]}")
    print(f"  category: {draft.data['category']} ({draft.category_reason})")
    for other, confidence in draft.similar:
        print(f"  note: existing entry '{other}' already fires on this line (confidence {confidence:.2f})")
    print(
        f"next: fill in the TODOs, then `triage kb validate {out}`, `triage kb test {out}` and `triage scan --kb {out} LOG`"
    )
    return EXIT_OK


def _ask(data: dict[str, Any], key: str, label: str) -> None:
    answer = input(f"{label} [{data[key]}]: ").strip()
    if answer:
        data[key] = answer


def _target_dir(explicit: str | None, *, allow_local: bool) -> Path:
    """--out, else the first TRIAGE_KB_PATH dir, else ./kb-local: a user dir, never the installed KB."""
    from triage.kb.paths import user_kb_dirs

    if explicit:
        return Path(explicit)
    user = user_kb_dirs()
    if user:
        return user[0]
    if allow_local:
        return LOCAL_KB_DIR
    raise FileNotFoundError("give --out DIR (or set TRIAGE_KB_PATH): imported entries go to a user KB dir")


def run_validate(args: argparse.Namespace) -> int:
    from triage.kb.loader import KBError
    from triage.kb.paths import kb_dirs
    from triage.kbtools.samples import default_samples_dir, load_baselines
    from triage.kbtools.validate import run_validators
    from triage.kbtools.validators import VALIDATORS

    if args.list_validators:
        for validator in VALIDATORS:
            print(f"{validator.name:<16} {validator.severity:<8} {validator.description}")
        return EXIT_OK
    context_dirs = kb_dirs(args.kb, include_shipped=args.shipped_kb)
    paths = [Path(p) for p in args.paths] or [d for d in context_dirs if d.is_dir()]
    baselines = load_baselines(Path(args.samples) if args.samples else default_samples_dir())
    try:
        report = run_validators(paths, context_dirs, baselines, strict=args.strict)
    except KBError as exc:
        print(f"triage: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        for note in report.notes:
            print(f"note: {note}", file=sys.stderr)
        for finding in report.findings:
            print(finding)
        excluded = f", {report.excluded} excluded by entries" if report.excluded else ""
        print(
            f"{plural(report.entries, 'entry', 'entries')}: {plural(report.errors, 'error')}, "
            f"{plural(report.warnings, 'warning')}{excluded}"
        )
    return EXIT_FOUND if report.errors else EXIT_OK


def run_test(args: argparse.Namespace) -> int:
    from triage.kbtools.examples import ExampleChecker

    dirs = [target for target in args.targets if Path(target).is_dir()]
    ids = [target for target in args.targets if target not in dirs]
    # The dirs given run over the shipped KB and --kb dirs, as a scan with --kb would see them.
    kb, skipped = load_kb_entries(args, dirs)
    unknown = [entry_id for entry_id in ids if entry_id not in kb.entries]
    if unknown:
        print(f"triage: no KB dir or entry id: {', '.join(unknown)} (see `triage kb list`)", file=sys.stderr)
        return EXIT_USAGE
    roots = [Path(d).resolve() for d in dirs]
    chosen = [
        entry
        for entry in kb.entries.values()
        if not args.targets
        or entry.id in ids
        or any(kb.sources[entry.id].path.resolve().is_relative_to(r) for r in roots)
    ]
    # The cached compiled KB (and its prefilter) saves seconds of compiling on every run.
    compiled = load_scan_kb(args, dirs)
    if compiled is None:
        return EXIT_USAGE
    checker = ExampleChecker(compiled)
    failed = 0
    for entry in sorted(chosen, key=lambda e: e.id):
        if not entry.examples.match:
            failed += 1
            print(f"FAIL {entry.id}: no match examples")
            continue
        failures = checker.failures(entry)
        failed += bool(failures)
        count = len(entry.examples.match) + len(entry.examples.no_match)
        print(f"{'FAIL' if failures else 'pass'} {entry.id} ({plural(count, 'example')})")
        for failure in failures:
            print(f"     {failure.kind}[{failure.index}]: {failure.message}")
    print(f"{len(chosen) - failed} passed, {failed} failed")
    return EXIT_FOUND if failed or skipped else EXIT_OK


def run_stats(args: argparse.Namespace) -> int:
    from triage.kbtools.stats import kb_stats

    stats = kb_stats(load_kb_entries(args)[0])
    if args.json:
        print(json.dumps(stats, ensure_ascii=False))
        return EXIT_OK
    for title, counts in stats.items():
        if isinstance(counts, dict):
            print(f"{title}: " + ", ".join(f"{key} {value}" for key, value in counts.items()))
        elif isinstance(counts, list):
            print(f"{title}: {len(counts)}" + (f" ({', '.join(counts)})" if counts else ""))
        else:
            print(f"{title}: {counts}")
    return EXIT_OK


def run_migrate(args: argparse.Namespace) -> int:
    from triage.kbtools.migrate import migrate_dir

    pending = failed = 0
    for directory in map(Path, args.dirs):
        if not directory.is_dir():
            print(f"triage: {directory}: not a KB directory", file=sys.stderr)
            return EXIT_USAGE
        report = migrate_dir(directory, write=not args.check)
        for path in report.rewritten:
            print(f"{'needs rewriting' if args.check else 'rewrote'} {path}")
        for problem in report.failed:
            print(f"triage: {problem}", file=sys.stderr)
        pending += len(report.rewritten)
        failed += len(report.failed)
        print(
            f"{directory}: {len(report.rewritten)} {'to rewrite' if args.check else 'rewritten'}, {report.current} current"
        )
    return EXIT_FOUND if failed or (args.check and pending) else EXIT_OK


def run_import(args: argparse.Namespace) -> int:
    from triage.kbtools.ascend_fd import AscendFdError, import_kg_config

    try:
        out = _target_dir(args.out, allow_local=False)
        result = import_kg_config(Path(args.config), out, lang=args.lang, force=args.force)
    except (AscendFdError, FileNotFoundError) as exc:
        print(f"triage: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"wrote {plural(len(result.written), 'entry', 'entries')} to {out}, kept {plural(len(result.existing), 'existing file')}"
    )
    for reason, codes in sorted(result.skipped.items()):
        print(f"skipped {len(codes)}: {reason}")
    print(f"next: `triage kb validate {out}`; entries whose examples fail overlap with curated ones")
    return EXIT_OK
