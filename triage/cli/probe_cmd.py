"""`triage probe list` and `triage probe run NAME|all`.

Exit codes: 0 every probe ok (or skipped), 1 at least one finding, 2 usage error or a probe error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from triage.cli.common import EXIT_FOUND, EXIT_OK, EXIT_USAGE, positive_float
from triage.probing import DEFAULT_TIMEOUT, PYTHON_ENV

if TYPE_CHECKING:
    from triage.probing.models import ProbeResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("probe", help="run live device probes that confirm or rule out causes")
    sub = parser.add_subparsers(dest="probe_command", required=True)
    sub.add_parser("list", help="list the available probes").set_defaults(func=run)
    run_p = sub.add_parser("run", help="run one probe, or all of them")
    run_p.add_argument("name", help="probe name, or 'all'")
    run_p.add_argument("--json", action="store_true", help="print a JSON array of results")
    run_p.add_argument("--device", choices=("npu", "cuda", "cpu"), help="override device detection")
    run_p.add_argument(
        "--python", help=f"Python with torch to run probes under (env {PYTHON_ENV}; default: this Python)"
    )
    run_p.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT, help="seconds per probe")
    run_p.add_argument("--record", help="`triage run` sidecar record, passed to hccl_init (init_process_group count)")
    run_p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from probes._common import human_summary
    from triage.probing import runner

    if args.probe_command == "list":
        for name, description in runner.list_probes():
            print(f"{name:12} {description}")
        return EXIT_OK
    names = [n for n, _ in runner.list_probes()] if args.name == "all" else [args.name]
    extra = {"hccl_init": ["--record", args.record]} if args.record else {}
    try:
        results = [
            runner.run_probe(
                n, python=args.python, timeout=args.timeout, device=args.device, extra_args=extra.get(n, ())
            )
            for n in names
        ]
    except runner.UnknownProbeError as exc:
        print(f"triage probe: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
    else:
        for r in results:
            print(human_summary(r.model_dump(mode="json")))
    return exit_code(results)


def exit_code(results: list[ProbeResult]) -> int:
    statuses = {r.status for r in results}
    if "error" in statuses:
        return EXIT_USAGE
    return EXIT_FOUND if "finding" in statuses else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (`python -m triage.cli.probe_cmd run all`), usable before or without triage's main CLI."""
    parser = argparse.ArgumentParser(prog="triage")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["probe", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
